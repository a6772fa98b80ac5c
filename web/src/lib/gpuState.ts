import type { Gpu } from '../api/types';
import { formatTime } from './time';
import { parseUnits } from './queues';

export type GpuState = 'unhealthy' | 'ghost' | 'idle' | 'held' | 'free';

// Legend order: the usual states first, the ones that need attention last.
export const GPU_STATES: GpuState[] = ['free', 'held', 'idle', 'unhealthy', 'ghost'];

export interface GpuStateStyle {
  label: string;
  // Border and text accent; the tile background is the light tint.
  color: string;
  background: string;
  // antd Tag colour.
  tag: string;
}

export const GPU_STATE_STYLE: Record<GpuState, GpuStateStyle> = {
  free: { label: 'free', color: '#389e0d', background: '#f6ffed', tag: 'success' },
  held: { label: 'held', color: '#1668dc', background: '#e6f4ff', tag: 'processing' },
  idle: { label: 'idle while held', color: '#d46b08', background: '#fff7e6', tag: 'warning' },
  unhealthy: { label: 'unhealthy', color: '#cf1322', background: '#fff1f0', tag: 'error' },
  ghost: { label: 'ghost process', color: '#722ed1', background: '#f9f0ff', tag: 'purple' },
};

export interface GpuStatus {
  state: GpuState;
  // One line for people: "held by job 12", "idle while held since …".
  text: string;
  // Jobs holding the GPU that the caller may see.
  jobs: number[];
}

// Jobs the caller can see on this GPU: `jobs` lists every holder of a shared
// GPU, `job` is the single holder in older answers.
export function gpuJobs(g: Gpu): number[] {
  const ids = new Set<number>(g.jobs ?? []);
  if (g.job !== null && g.job !== undefined) ids.add(g.job);
  return [...ids].sort((a, b) => a - b);
}

// Fraction of the GPU in use (1 = whole), counting jobs the caller cannot see.
export function gpuUsed(g: Gpu): number {
  return parseUnits(g.used ?? null) ?? 0;
}

function heldText(jobs: number[], used: number): string {
  // Used but no job visible: a project the caller is not a member of.
  if (jobs.length === 0) return 'in use';
  const share = used > 0 && used < 1 ? ` (${Math.round(used * 100)}% of the GPU)` : '';
  return `held by job${jobs.length > 1 ? 's' : ''} ${jobs.join(', ')}${share}`;
}

// What a GPU is doing, in the order that matters to an operator: a broken
// GPU first, then a process nobody scheduled, then a held GPU doing nothing.
export function gpuState(g: Gpu): GpuStatus {
  const jobs = gpuJobs(g);
  const used = gpuUsed(g);
  const held = jobs.length > 0 || used > 0;
  if (!g.healthy) {
    return { state: 'unhealthy', text: `unhealthy: ${g.unhealthy_reason || 'no reason given'}`, jobs };
  }
  const ghosts = g.ghost_pids ?? [];
  if (ghosts.length > 0) {
    return {
      state: 'ghost',
      text: `ghost process${ghosts.length > 1 ? 'es' : ''} (pid ${ghosts.join(', ')}) not started by any job`,
      jobs,
    };
  }
  if (held && g.idle_since) {
    return { state: 'idle', text: `idle while held since ${formatTime(g.idle_since)}`, jobs };
  }
  if (held) return { state: 'held', text: heldText(jobs, used), jobs };
  return { state: 'free', text: 'free', jobs };
}
