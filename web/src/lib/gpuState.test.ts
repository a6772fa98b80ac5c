import { describe, expect, it } from 'vitest';
import type { Gpu } from '../api/types';
import { gpuState } from './gpuState';

const base: Gpu = { index: 0, model: 'A100-80GB', healthy: true, job: null, jobs: [], used: '0' };

describe('gpuState', () => {
  it('is free when nothing holds it', () => {
    expect(gpuState(base)).toEqual({ state: 'free', text: 'free', jobs: [] });
  });

  it('names the holding jobs', () => {
    expect(gpuState({ ...base, job: 12, jobs: [12], used: '1' })).toMatchObject({ state: 'held', text: 'held by job 12', jobs: [12] });
    expect(gpuState({ ...base, jobs: [3, 4], used: '0.75' }).text).toBe('held by jobs 3, 4 (75% of the GPU)');
  });

  it('says "in use" when a project the caller cannot see holds it', () => {
    expect(gpuState({ ...base, used: '1' })).toMatchObject({ state: 'held', text: 'in use', jobs: [] });
  });

  it('flags a held GPU that does nothing', () => {
    const s = gpuState({ ...base, job: 7, jobs: [7], used: '1', idle_since: 1_700_000_000_000 });
    expect(s.state).toBe('idle');
    expect(s.text).toMatch(/^idle while held since \d{4}-\d\d-\d\d/);
    // idle_since on a free GPU means nothing: nobody holds it.
    expect(gpuState({ ...base, idle_since: 1_700_000_000_000 }).state).toBe('free');
  });

  it('puts unhealthy before ghost before idle', () => {
    const everything: Gpu = {
      ...base,
      healthy: false,
      unhealthy_reason: 'XID 79: fallen off the bus',
      ghost_pids: [4242],
      job: 7,
      jobs: [7],
      used: '1',
      idle_since: 1,
    };
    expect(gpuState(everything)).toMatchObject({ state: 'unhealthy', text: 'unhealthy: XID 79: fallen off the bus' });
    expect(gpuState({ ...everything, healthy: true })).toMatchObject({ state: 'ghost', text: expect.stringContaining('4242') });
  });
});
