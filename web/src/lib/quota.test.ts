import { describe, expect, it } from 'vitest';
import type { Gpu, NodeInfo, Queue } from '../api/types';
import { computeQuotaHint, freeGpus, queueFor } from './quota';

function gpu(index: number, model: string, used: string | number = '0', healthy = true): Gpu {
  return { index, model, used, healthy };
}
function node(name: string, gpus: Gpu[]): NodeInfo {
  return { name, cpus: 64, memory_bytes: 1, gpus };
}
function queue(name: string, projects: string[], resources: Queue['resources']): Queue {
  return { name, projects, resources, weight: 1, pending: 0, running: 0 };
}

const nodes = [
  node('a', [gpu(0, 'NVIDIA A100-SXM4-80GB', '1'), gpu(1, 'NVIDIA A100-SXM4-80GB', '0.5'), gpu(2, 'NVIDIA A100-SXM4-80GB')]),
  node('b', [gpu(0, 'NVIDIA H100 80GB HBM3'), gpu(1, 'NVIDIA H100 80GB HBM3', 0, false)]),
];
const queues = [
  queue('nlp', ['nlp'], [
    { name: 'gpu', nominal: 16, borrowing_limit: null, lending_limit: null, used: 4 },
    { name: 'gpu:A100', nominal: '8' as unknown as number, borrowing_limit: null, lending_limit: null, used: '2' as unknown as number },
  ]),
  queue('default', [], [{ name: 'gpu', nominal: null, borrowing_limit: null, lending_limit: null, used: 0 }]),
];

describe('quota hint', () => {
  it('finds the queue: the named one, the project\'s, else default', () => {
    expect(queueFor(queues, 'nlp')?.name).toBe('nlp');
    expect(queueFor(queues, 'vision')?.name).toBe('default');
    expect(queueFor(queues, 'nlp', 'default')?.name).toBe('default');
    expect(queueFor([], 'nlp')).toBeNull();
  });

  it('counts free GPUs of the model, shares and unhealthy ones included', () => {
    expect(freeGpus(nodes, ['a100'])).toMatchObject({ free: 1.5, total: 3 });
    expect(freeGpus(nodes, ['H100'])).toMatchObject({ free: 1, total: 2 });
    expect(freeGpus(nodes, [])).toMatchObject({ free: 2.5, total: 5 });
  });

  it('says how much of the model quota is free', () => {
    const h = computeQuotaHint({ queues, nodes, project: 'nlp', gpus: 1, gpuType: ['A100'] });
    expect(h.quotaFree).toBe(6);
    expect(h.quotaNominal).toBe(8);
    expect(h.summary).toContain('Project nlp has 6 of 8 A100 GPUs free (queue nlp)');
    expect(h.summary).toContain('1.5 of 3 A100 GPUs are free on the nodes');
    expect(h.warnings).toEqual([]);
  });

  it('uses the gpu quota without a model and warns when the request is over', () => {
    const h = computeQuotaHint({ queues, nodes, project: 'nlp', gpus: 4, replicas: 4 });
    expect(h.requested).toBe(16);
    expect(h.quotaFree).toBe(12);
    expect(h.warnings).toHaveLength(2);
    expect(h.warnings[0]).toMatch(/will wait/);
    expect(h.warnings[1]).toMatch(/borrow/);
  });

  it('copes with an unlimited queue', () => {
    const h = computeQuotaHint({ queues, nodes, project: 'vision', gpus: 0.25 });
    expect(h.quotaNominal).toBeNull();
    expect(h.summary).toMatch(/no GPU quota in queue default/);
    expect(h.warnings).toEqual([]);
  });
});
