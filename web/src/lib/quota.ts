import type { NodeInfo, Queue, QueueResource } from '../api/types';

// The live capacity hint of the submit form: how much of its quota the
// project has left and how many GPUs of the wanted model are free now. The
// API sends amounts as numbers or as strings ("0.25"); borrowing is not
// modelled, so this is a hint and the scheduler has the last word.

function n(v: unknown): number {
  if (v === null || v === undefined || v === '') return 0;
  const x = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(x) ? x : 0;
}

// Model matching as the server does it: any of the wanted names is a
// case-insensitive substring of the GPU's model.
export function modelMatches(wanted: string[], model: string): boolean {
  if (wanted.length === 0) return true;
  const m = model.toLowerCase();
  return wanted.some((w) => w.trim() !== '' && m.includes(w.trim().toLowerCase()));
}

// A job goes to the queue it names, else its project's queue, else `default`.
export function queueFor(queues: Queue[], project: string | undefined, named?: string): Queue | null {
  if (named) return queues.find((q) => q.name === named) ?? null;
  if (project) {
    const own = queues.find((q) => q.projects?.includes(project));
    if (own) return own;
  }
  return queues.find((q) => q.name === 'default') ?? null;
}

// The quota resource that limits this request: `gpu:<model>` when the
// wanted models all fall under one such key, else `gpu`.
export function gpuResourceFor(queue: Queue, wanted: string[]): QueueResource | null {
  const byModel = queue.resources.filter((r) => r.name.startsWith('gpu:'));
  if (wanted.length > 0) {
    const hits = byModel.filter((r) => {
      const key = r.name.slice(4).toLowerCase();
      return wanted.every((w) => w.toLowerCase().includes(key) || key.includes(w.toLowerCase()));
    });
    if (hits.length === 1) return hits[0];
  }
  return queue.resources.find((r) => r.name === 'gpu') ?? null;
}

export interface GpuCapacity {
  free: number;
  total: number;
  // The models counted, for the sentence ("A100-80GB").
  models: string[];
}

export function freeGpus(nodes: NodeInfo[], wanted: string[]): GpuCapacity {
  let free = 0;
  let total = 0;
  const models = new Set<string>();
  for (const node of nodes) {
    for (const g of node.gpus ?? []) {
      if (!modelMatches(wanted, g.model)) continue;
      models.add(g.model);
      total += 1;
      if (g.healthy === false) continue;
      free += Math.max(0, 1 - n(g.used));
    }
  }
  return { free: round(free), total, models: Array.from(models).sort() };
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

export function fmt(x: number): string {
  return String(round(x));
}

export interface QuotaHintInput {
  queues: Queue[];
  nodes: NodeInfo[];
  project?: string;
  queue?: string;
  gpus?: number | null;
  gpuType?: string[];
  replicas?: number | null;
}

export interface QuotaHint {
  queue: string | null;
  // The GPU kind in words: "A100" or "" for any.
  kind: string;
  // null when the queue sets no nominal quota for the resource.
  quotaNominal: number | null;
  quotaFree: number | null;
  clusterFree: number;
  clusterTotal: number;
  requested: number;
  summary: string;
  warnings: string[];
}

function plural(x: number, one: string, many: string): string {
  return x === 1 ? one : many;
}

export function computeQuotaHint(input: QuotaHintInput): QuotaHint {
  const wanted = (input.gpuType ?? []).map((t) => t.trim()).filter(Boolean);
  const replicas = Math.max(1, n(input.replicas) || 1);
  const requested = round(n(input.gpus) * replicas);
  const queue = queueFor(input.queues, input.project, input.queue);
  const res = queue ? gpuResourceFor(queue, wanted) : null;
  const kind = res && res.name.startsWith('gpu:') ? res.name.slice(4) : wanted.join(' or ');
  const gpuWord = (x: number) => `${kind ? kind + ' ' : ''}${plural(x, 'GPU', 'GPUs')}`;

  const cap = freeGpus(input.nodes, wanted);
  let quotaNominal: number | null = null;
  let quotaFree: number | null = null;
  if (res && res.nominal !== null && res.nominal !== undefined) {
    quotaNominal = n(res.nominal);
    quotaFree = round(Math.max(0, quotaNominal - n(res.used)));
  }

  const who = input.project ? `Project ${input.project}` : 'Your project';
  const parts: string[] = [];
  if (!queue) {
    parts.push(`No queue takes jobs of ${input.project ?? 'this project'}; the server will say why`);
  } else if (quotaNominal === null) {
    parts.push(`${who} has no GPU quota in queue ${queue.name}`);
  } else {
    parts.push(`${who} has ${fmt(quotaFree ?? 0)} of ${fmt(quotaNominal)} ${gpuWord(quotaNominal)} free (queue ${queue.name})`);
  }
  const clusterKind = wanted.length > 0 ? `${wanted.join(' or ')} ` : '';
  if (cap.total === 0) {
    parts.push(wanted.length > 0 ? `no node has a ${wanted.join(' or ')} GPU` : 'no node has GPUs');
  } else {
    parts.push(`${fmt(cap.free)} of ${cap.total} ${clusterKind}${plural(cap.total, 'GPU is', 'GPUs are')} free on the nodes`);
  }
  const summary = parts.join('; ') + '.';

  const warnings: string[] = [];
  if (requested > 0) {
    if (cap.total > 0 && requested > cap.free) {
      warnings.push(
        `This job asks for ${fmt(requested)} ${plural(requested, 'GPU', 'GPUs')} and ${fmt(cap.free)} ${plural(cap.free, 'is', 'are')} free now: it will wait until enough are free.`,
      );
    }
    if (quotaFree !== null && requested > quotaFree) {
      warnings.push(
        `It asks for more than the ${fmt(quotaFree)} ${plural(quotaFree, 'GPU', 'GPUs')} left in the quota: it may borrow idle quota from its cohort, or wait.`,
      );
    }
  }
  return {
    queue: queue?.name ?? null,
    kind,
    quotaNominal,
    quotaFree,
    clusterFree: cap.free,
    clusterTotal: cap.total,
    requested,
    summary,
    warnings,
  };
}
