import { describe, expect, it } from 'vitest';
import type { Job, JobList, NodeInfo } from '../api/types';
import {
  filtersFromSearch,
  filtersToSearch,
  gpuUtilSeries,
  jobListUrls,
  jobTiming,
  mergeJobPages,
  mergePoints,
  metricChart,
  placementRows,
  thinPoints,
} from './jobs';

const job = (id: number, extra: Partial<Job> = {}): Job => ({
  id,
  name: `j${id}`,
  project: 'nlp',
  user: 'eve',
  state: 'running',
  spec: {},
  created_at: 1000,
  attempts: 1,
  ...extra,
});

describe('filters in the URL', () => {
  it('round-trips and drops unknown values', () => {
    const f = filtersFromSearch(new URLSearchParams('state=running,bogus&state=failed&project=nlp&limit=25&before=40'));
    expect(f).toEqual({ states: ['running', 'failed'], project: 'nlp', user: '', queue: '', limit: 25, before: 40 });
    expect(filtersToSearch(f).toString()).toBe('state=running&state=failed&project=nlp&limit=25&before=40');
    expect(filtersFromSearch(new URLSearchParams('limit=7')).limit).toBe(50);
    expect(filtersToSearch(filtersFromSearch(new URLSearchParams(''))).toString()).toBe('');
  });

  it('asks once per state, with the same cursor', () => {
    const f = filtersFromSearch(new URLSearchParams('state=pending,running&user=eve&queue=q&before=9'));
    expect(jobListUrls(f)).toEqual([
      '/api/v1/jobs?state=pending&user=eve&queue=q&limit=50&before=9',
      '/api/v1/jobs?state=running&user=eve&queue=q&limit=50&before=9',
    ]);
  });
});

describe('mergeJobPages', () => {
  it('keeps the newest jobs of all pages and a cursor after the last', () => {
    const a: JobList = { jobs: [job(9), job(5), job(2)], next_before: null };
    const b: JobList = { jobs: [job(8), job(7)], next_before: null };
    expect(mergeJobPages([a, b], 3)).toEqual({ jobs: [job(9), job(8), job(7)], next_before: 7 });
    expect(mergeJobPages([a, b], 10)).toEqual({ jobs: [job(9), job(8), job(7), job(5), job(2)], next_before: null });
    expect(mergeJobPages([a, { ...b, next_before: 7 }], 10).next_before).toBe(2);
  });
});

describe('jobTiming', () => {
  it('is the wait of a pending job, the run so far, or the whole run', () => {
    expect(jobTiming(job(1, { state: 'pending', created_at: 1000 }), 61000)).toEqual({ kind: 'waiting', ms: 60000 });
    expect(jobTiming(job(1, { started_at: 2000 }), 5000)).toEqual({ kind: 'running', ms: 3000 });
    expect(jobTiming(job(1, { state: 'failed', started_at: 2000, finished_at: 9000 }), 1e9)).toEqual({ kind: 'ran', ms: 7000 });
    // The API sends 0 for "not yet".
    expect(jobTiming(job(1, { state: 'cancelled', started_at: 0, finished_at: 9000 }))).toEqual({ kind: 'none', ms: null });
  });
});

describe('placement and GPU charts', () => {
  const attempt = {
    job: 1,
    number: 2,
    state: 'running',
    replicas: [
      { node: 'a', gpus: [0, 1] },
      { node: 'b', gpus: [3], gpu_milli: [250] },
    ],
  };

  it('lists each replica with its GPUs and shares', () => {
    expect(placementRows(attempt).map((r) => [r.node, r.gpus, r.shares])).toEqual([
      ['a', [0, 1], ['1', '1']],
      ['b', [3], ['0.25']],
    ]);
  });

  it('draws only the GPUs of the attempt, on one time axis', () => {
    const nodes: NodeInfo[] = [
      {
        name: 'a',
        cpus: 8,
        memory_bytes: 1,
        gpus: [
          { index: 0, model: 'A100', healthy: true, history: [[10, 50], [20, 60]] },
          { index: 1, model: 'A100', healthy: true },
          { index: 2, model: 'A100', healthy: true, history: [[10, 99]] },
        ],
      },
      { name: 'b', cpus: 8, memory_bytes: 1, gpus: [{ index: 3, model: 'A100', healthy: true, history: [[15, 5]] }] },
    ];
    expect(gpuUtilSeries(nodes, attempt)).toEqual({
      x: [10, 15, 20],
      series: [
        { label: 'a/gpu0', values: [50, null, 60] },
        { label: 'b/gpu3', values: [null, 5, null] },
      ],
    });
    expect(gpuUtilSeries(nodes, undefined).series).toEqual([]);
  });
});

describe('metric points', () => {
  const p = (id: number, step: number | null, value = id) => ({ id, step, value, time: id * 1000 });

  it('merges new points by id and thins keeping the ends', () => {
    expect(mergePoints([p(1, 1), p(2, 2)], [p(3, 3)]).map((x) => x.id)).toEqual([1, 2, 3]);
    expect(mergePoints([p(1, 1), p(3, 3)], [p(2, 2), p(3, 3)]).map((x) => x.id)).toEqual([1, 2, 3]);
    const many = Array.from({ length: 101 }, (_, i) => i);
    const thin = thinPoints(many, 11);
    expect(thin).toHaveLength(11);
    expect(thin[0]).toBe(0);
    expect(thin[10]).toBe(100);
  });

  it('uses steps on the x axis when every point has one, times otherwise', () => {
    expect(metricChart([p(1, 10), p(2, 20)])).toEqual({ x: [10, 20], values: [1, 2], xIsTime: false });
    expect(metricChart([p(1, 10), p(2, null)])).toEqual({ x: [1000, 2000], values: [1, 2], xIsTime: true });
  });
});
