import { describe, expect, it } from 'vitest';
import type { Queue, QueueResource } from '../api/types';
import {
  appendUsage,
  EMPTY_HISTORY,
  borrowedOf,
  fairShareRank,
  formatAmount,
  lentOf,
  memoryForConfig,
  oldestWait,
  parseMemory,
  parseUnits,
  queueToEditForm,
  sortResources,
} from './queues';

// The server writes amounts as text; the declared type says numbers.
function res(r: Record<string, unknown>): QueueResource {
  return r as unknown as QueueResource;
}

function queue(over: Partial<Queue> & { name: string }): Queue {
  return { cohort: '', weight: 1, projects: [over.name], resources: [], pending: 0, running: 0, ...over };
}

describe('amounts', () => {
  it('reads memory and units as the server writes them', () => {
    expect(parseMemory('512Gi')).toBe(512 * 2 ** 30);
    expect(parseMemory('1.5Gi')).toBe(1536 * 2 ** 20);
    expect(parseMemory('16G')).toBe(16e9);
    expect(parseMemory(1024)).toBe(1024);
    expect(parseMemory('lots')).toBeNull();
    expect(parseUnits('0.5')).toBe(0.5);
    expect(parseUnits('250m')).toBe(0.25);
    expect(parseUnits(8)).toBe(8);
    expect(parseUnits(null)).toBeNull();
  });

  it('writes memory with the largest exact unit, like the config', () => {
    expect(memoryForConfig(512 * 2 ** 30)).toBe('512Gi');
    expect(memoryForConfig(1.5 * 2 ** 30)).toBe('1536Mi');
    expect(memoryForConfig(2 ** 40)).toBe('1Ti');
    expect(memoryForConfig(1000)).toBe(1000);
  });

  it('formats memory as GiB for tables', () => {
    expect(formatAmount('memory', 512 * 2 ** 30)).toBe('512 GiB');
    expect(formatAmount('memory', 1.5 * 2 ** 30)).toBe('1.50 GiB');
    expect(formatAmount('gpu', 2.5)).toBe('2.5');
    expect(formatAmount('gpu', null)).toBe('—');
  });
});

describe('queueToEditForm', () => {
  it('turns the GET resources list into the PUT quota map', () => {
    const q = queue({
      name: 'nlp',
      cohort: 'research',
      weight: 2,
      projects: ['nlp'],
      resources: [
        res({ name: 'cpu', nominal: '16', borrowing_limit: null, lending_limit: null, used: '0.5' }),
        res({ name: 'gpu', nominal: '8', borrowing_limit: '4', lending_limit: '8', used: '12' }),
        res({ name: 'gpu:A100', nominal: '0.5', borrowing_limit: null, lending_limit: '0', used: '0' }),
        res({ name: 'memory', nominal: '512Gi', borrowing_limit: '1.5Gi', lending_limit: null, used: '1Gi' }),
      ],
    });
    expect(queueToEditForm(q)).toEqual({
      project: 'nlp',
      cohort: 'research',
      weight: 2,
      quota: {
        cpu: { nominal: 16 },
        gpu: { nominal: 8, borrowing_limit: 4, lending_limit: 8 },
        'gpu:A100': { nominal: 0.5, lending_limit: 0 },
        memory: { nominal: '512Gi', borrowing_limit: '1536Mi' },
      },
    });
  });

  it('leaves out resources that are only used, not limited', () => {
    const q = queue({
      name: 'default',
      cohort: null,
      projects: [],
      resources: [res({ name: 'gpu', nominal: null, borrowing_limit: null, lending_limit: null, used: '3' })],
    });
    expect(queueToEditForm(q)).toEqual({ cohort: '', weight: 1, quota: {} });
  });
});

describe('borrowed and lent', () => {
  it("uses the server's figures when present", () => {
    const r = res({ name: 'gpu', nominal: '8', borrowing_limit: null, lending_limit: null, used: '12', borrowed: '3', lent: '1' });
    expect(borrowedOf(r)).toBe(3);
    expect(lentOf(r)).toBe(1);
  });

  it('falls back to use above nominal, and nothing lent', () => {
    expect(borrowedOf(res({ name: 'gpu', nominal: '8', used: '12' }))).toBe(4);
    expect(borrowedOf(res({ name: 'gpu', nominal: '8', used: '2' }))).toBe(0);
    expect(borrowedOf(res({ name: 'memory', nominal: '1Gi', used: '3Gi' }))).toBe(2 * 2 ** 30);
    expect(borrowedOf(res({ name: 'gpu', nominal: null, used: '5' }))).toBe(0);
    expect(lentOf(res({ name: 'gpu', nominal: '8', used: '0' }))).toBe(0);
  });
});

describe('fairShareRank', () => {
  it('ranks GPU-hours per weight within each cohort', () => {
    const ranks = fairShareRank([
      queue({ name: 'a', cohort: 'research', weight: 2, usage_gpu_hours: 10 }), // 5
      queue({ name: 'b', cohort: 'research', weight: 1, usage_gpu_hours: 3 }), // 3
      queue({ name: 'c', cohort: 'research', weight: 1, usage_gpu_hours: 5 }), // 5
      queue({ name: 'd', cohort: 'prod', weight: 1, usage_gpu_hours: 100 }),
      queue({ name: 'e', cohort: null, weight: 1, usage_gpu_hours: 1 }),
    ]);
    expect(ranks.get('b')).toMatchObject({ rank: 1, of: 3, score: 3 });
    expect(ranks.get('a')).toMatchObject({ rank: 2, of: 3, score: 5 });
    expect(ranks.get('c')).toMatchObject({ rank: 2, of: 3 });
    expect(ranks.get('d')).toMatchObject({ rank: 1, of: 1, cohort: 'prod' });
    expect(ranks.get('e')).toMatchObject({ rank: 1, of: 1, cohort: '' });
  });
});

describe('helpers', () => {
  it('puts GPU resources first', () => {
    const names = sortResources([{ name: 'memory' }, { name: 'gpu:H100' }, { name: 'cpu' }, { name: 'gpu' }, { name: 'gpu:A100' }]).map((r) => r.name);
    expect(names).toEqual(['gpu', 'gpu:A100', 'gpu:H100', 'cpu', 'memory']);
  });

  it('finds the oldest wait', () => {
    expect(oldestWait([{ oldest_pending_at: 5000 }, { oldest_pending_at: 2000 }, { oldest_pending_at: null }], 10000)).toBe(8000);
    expect(oldestWait([{}], 10000)).toBeNull();
  });
});

describe('appendUsage', () => {
  const withGpu = (name: string, used: string) =>
    queue({ name, resources: [res({ name: 'gpu', nominal: '8', borrowing_limit: null, lending_limit: null, used })] });

  it('keeps one series per queue, aligned on the sample times', () => {
    let h = appendUsage(EMPTY_HISTORY, [withGpu('a', '2')], 1000);
    h = appendUsage(h, [withGpu('a', '3'), withGpu('b', '0.5')], 2000);
    h = appendUsage(h, [withGpu('b', '1')], 3000);
    expect(h.x).toEqual([1000, 2000, 3000]);
    expect(h.byQueue).toEqual({ a: [2, 3, null], b: [null, 0.5, 1] });
  });

  it('keeps the last samples only', () => {
    let h = EMPTY_HISTORY;
    for (let t = 1; t <= 5; t++) h = appendUsage(h, t <= 2 ? [withGpu('old', '1')] : [withGpu('new', String(t))], t, 3);
    expect(h.x).toEqual([3, 4, 5]);
    expect(h.byQueue).toEqual({ new: [3, 4, 5] });
  });
});
