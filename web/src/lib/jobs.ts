import type { Attempt, Job, JobList, JobState, MetricPoint, NodeInfo, Replica } from '../api/types';
import { ALL_STATES } from '../api/types';

// Pure parts of the jobs list and the job page: filters kept in the URL,
// merging per-state pages, timings, placement and chart data.

export const PAGE_SIZES = [25, 50, 100] as const;
export const DEFAULT_PAGE_SIZE = 50;

export interface JobFilters {
  states: JobState[];
  project: string;
  user: string;
  queue: string;
  limit: number;
  // Page cursor: only jobs with an id below this (the API's next_before).
  before: number | null;
}

const KNOWN_STATES = new Set<string>([...ALL_STATES, 'preempted']);

export function filtersFromSearch(search: URLSearchParams): JobFilters {
  const states: JobState[] = [];
  for (const raw of search.getAll('state')) {
    for (const s of raw.split(',')) {
      const v = s.trim();
      if (KNOWN_STATES.has(v) && !states.includes(v as JobState)) states.push(v as JobState);
    }
  }
  const limit = Number(search.get('limit'));
  const before = Number(search.get('before'));
  return {
    states,
    project: search.get('project') ?? '',
    user: search.get('user') ?? '',
    queue: search.get('queue') ?? '',
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE,
    before: Number.isInteger(before) && before > 0 ? before : null,
  };
}

// Only what differs from the defaults goes in the URL, so plain /jobs stays plain.
export function filtersToSearch(f: JobFilters): URLSearchParams {
  const q = new URLSearchParams();
  for (const s of f.states) q.append('state', s);
  if (f.project) q.set('project', f.project);
  if (f.user) q.set('user', f.user);
  if (f.queue) q.set('queue', f.queue);
  if (f.limit !== DEFAULT_PAGE_SIZE) q.set('limit', String(f.limit));
  if (f.before) q.set('before', String(f.before));
  return q;
}

export function hasFilters(f: JobFilters): boolean {
  return f.states.length > 0 || !!f.project || !!f.user || !!f.queue;
}

// The API filters by one state at a time, so several states are asked for
// one by one with the same cursor and merged (mergeJobPages).
export function jobListUrls(f: JobFilters): string[] {
  const base = (state?: string) => {
    const q = new URLSearchParams();
    if (state) q.set('state', state);
    if (f.project) q.set('project', f.project);
    if (f.user) q.set('user', f.user);
    if (f.queue) q.set('queue', f.queue);
    q.set('limit', String(f.limit));
    if (f.before) q.set('before', String(f.before));
    return `/api/v1/jobs?${q.toString()}`;
  };
  return f.states.length ? f.states.map((s) => base(s)) : [base()];
}

// Each page holds the newest `limit` jobs of its state below the cursor, so
// the newest `limit` of their union are exactly the newest `limit` jobs of
// all those states below the cursor.
export function mergeJobPages(pages: JobList[], limit: number): JobList {
  if (pages.length === 1) return pages[0];
  const seen = new Set<number>();
  const all: Job[] = [];
  for (const p of pages) {
    for (const j of p.jobs) {
      if (!seen.has(j.id)) {
        seen.add(j.id);
        all.push(j);
      }
    }
  }
  all.sort((a, b) => b.id - a.id);
  const jobs = all.slice(0, limit);
  const more = all.length > limit || pages.some((p) => p.next_before !== null && p.next_before !== undefined);
  return { jobs, next_before: more && jobs.length ? jobs[jobs.length - 1].id : null };
}

export function jobQueue(job: Job): string {
  return job.waiting?.queue || job.spec?.queue || '';
}

// A server without the queue filter ignores the parameter; filtering here too
// keeps the list right either way.
export function filterByQueue(jobs: Job[], queue: string): Job[] {
  if (!queue) return jobs;
  return jobs.filter((j) => {
    const q = jobQueue(j);
    return !q || q === queue;
  });
}

export function isTerminal(state: string): boolean {
  return state === 'succeeded' || state === 'failed' || state === 'cancelled';
}

export function isActive(state: string): boolean {
  return state === 'pending' || state === 'scheduled' || state === 'running';
}

export interface Timing {
  kind: 'waiting' | 'running' | 'ran' | 'none';
  ms: number | null;
}

const set = (ms: number | null | undefined): ms is number => typeof ms === 'number' && ms > 0;

// How long a job has waited (pending), has been running, or ran (finished).
export function jobTiming(job: Pick<Job, 'state' | 'created_at' | 'started_at' | 'finished_at'>, now = Date.now()): Timing {
  if (job.state === 'pending' || job.state === 'scheduled') {
    return set(job.created_at) ? { kind: 'waiting', ms: Math.max(0, now - job.created_at) } : { kind: 'none', ms: null };
  }
  if (job.state === 'running') {
    return set(job.started_at) ? { kind: 'running', ms: Math.max(0, now - job.started_at) } : { kind: 'none', ms: null };
  }
  if (set(job.started_at) && set(job.finished_at)) {
    return { kind: 'ran', ms: Math.max(0, job.finished_at - job.started_at) };
  }
  return { kind: 'none', ms: null };
}

export function gpuCount(job: Job): number {
  const g = job.spec?.resources?.gpus;
  const per = typeof g === 'string' ? Number(g) : (g ?? 0);
  const replicas = job.spec?.replicas ?? 1;
  return Number.isFinite(per) ? per * replicas : 0;
}

// "2", "0.25", "2 × 4" (per replica × replicas)
export function gpuLabel(job: Job): string {
  const g = job.spec?.resources?.gpus;
  if (g === undefined || g === null || g === '' || Number(g) === 0) return '0';
  const replicas = job.spec?.replicas ?? 1;
  return replicas > 1 ? `${g} × ${replicas}` : String(g);
}

export interface PlacementRow {
  key: string;
  replica: number;
  node: string;
  gpus: number[];
  // Per GPU share of the device, "1" for a whole GPU.
  shares: string[];
}

function milliFor(replica: Replica, i: number): number | null {
  const m = replica.gpu_milli;
  if (m === undefined || m === null) return null;
  if (Array.isArray(m)) return typeof m[i] === 'number' ? m[i] : null;
  return m;
}

export function shareLabel(milli: number | null): string {
  if (milli === null || milli >= 1000) return '1';
  return String(Math.round(milli) / 1000);
}

export function placementRows(attempt: Attempt | undefined | null): PlacementRow[] {
  if (!attempt?.replicas) return [];
  return attempt.replicas.map((r, idx) => ({
    key: `${idx}`,
    replica: idx,
    node: r.node,
    gpus: r.gpus ?? [],
    shares: (r.gpus ?? []).map((_, i) => shareLabel(milliFor(r, i))),
  }));
}

export interface ChartData {
  x: number[];
  series: { label: string; values: (number | null)[] }[];
}

// One series per GPU the attempt holds, from the nodes' sampled history,
// on a shared time axis (samples of different GPUs need not line up).
export function gpuUtilSeries(nodes: NodeInfo[], attempt: Attempt | undefined | null): ChartData {
  const picked: { label: string; history: [number, number][] }[] = [];
  for (const r of attempt?.replicas ?? []) {
    const node = nodes.find((n) => n.name === r.node);
    if (!node) continue;
    for (const index of r.gpus ?? []) {
      const gpu = node.gpus.find((g) => g.index === index);
      const label = `${r.node}/gpu${index}`;
      if (gpu?.history && gpu.history.length > 0 && !picked.some((p) => p.label === label)) {
        picked.push({ label, history: gpu.history });
      }
    }
  }
  if (picked.length === 0) return { x: [], series: [] };
  const times = Array.from(new Set(picked.flatMap((p) => p.history.map((h) => h[0])))).sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const series = picked.map((p) => {
    const values: (number | null)[] = new Array(times.length).fill(null);
    for (const [t, v] of p.history) values[index.get(t)!] = v;
    return { label: p.label, values };
  });
  return { x: times, series };
}

// Adds newly read points (by id) to a series kept oldest first.
export function mergePoints(prev: MetricPoint[], next: MetricPoint[]): MetricPoint[] {
  if (next.length === 0) return prev;
  const last = prev.length ? prev[prev.length - 1].id : -Infinity;
  if (next.every((p) => p.id > last)) return [...prev, ...next];
  const byId = new Map(prev.map((p) => [p.id, p]));
  for (const p of next) byId.set(p.id, p);
  return Array.from(byId.values()).sort((a, b) => a.id - b.id);
}

// Evenly spaced points, always keeping the first and the last, like the
// server's max_points, so a long-running job's chart stays light.
export function thinPoints<T>(points: T[], max: number): T[] {
  if (points.length <= max || max < 2) return points;
  const out: T[] = [];
  const step = (points.length - 1) / (max - 1);
  for (let i = 0; i < max; i++) out.push(points[Math.round(i * step)]);
  return out;
}

// Steps on the x axis when every point has one; times otherwise.
export function metricChart(points: MetricPoint[]): { x: number[]; values: number[]; xIsTime: boolean } {
  const bySteps = points.length > 0 && points.every((p) => p.step !== null && p.step !== undefined);
  const sorted = bySteps ? [...points].sort((a, b) => (a.step as number) - (b.step as number) || a.id - b.id) : points;
  return {
    x: sorted.map((p) => (bySteps ? (p.step as number) : p.time)),
    values: sorted.map((p) => p.value),
    xIsTime: !bySteps,
  };
}

// loss first (what people look for), then the rest by name.
export function orderMetricNames(names: string[]): string[] {
  return [...names].sort((a, b) => (a === 'loss' ? -1 : b === 'loss' ? 1 : a.localeCompare(b)));
}
