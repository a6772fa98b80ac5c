import type { Queue, QueueResource } from '../api/types';

// GET /api/v1/queues gives a `resources[]` list with amounts as text ("8",
// "0.5", "512Gi", null for no limit); PUT /api/v1/queues/{name} takes one
// entry of the config file's `scheduler.queues`: a `quota{}` map by resource.
// These helpers convert between the two and read the amounts as numbers.

// What the wire may carry for an amount: the server writes strings, older
// fixtures and the type declaration say numbers.
export type Amount = number | string | null | undefined;

const MEMORY_UNITS: Record<string, number> = {
  '': 1,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  K: 1e3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
};

export function isMemory(resource: string): boolean {
  return resource === 'memory';
}

export function isGpu(resource: string): boolean {
  return resource === 'gpu' || resource.startsWith('gpu:');
}

// Bytes of "512Gi", "1.5Gi" (the server shows amounts that are not whole
// units with one decimal), "16G" or a plain number; null when unreadable.
export function parseMemory(v: Amount): number | null {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?|k)?\s*$/.exec(v);
  if (!m) return null;
  const scale = MEMORY_UNITS[m[2] ?? ''];
  if (scale === undefined) return null;
  return Math.round(Number(m[1]) * scale);
}

// GPUs or CPUs: 8, "8", "0.5" or "250m" (milli-units); null when unreadable.
export function parseUnits(v: Amount): number | null {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  const s = v.trim();
  const milli = /^(\d+)m$/.exec(s);
  if (milli) return Number(milli[1]) / 1000;
  if (!/^\d+(\.\d+)?$/.test(s)) return null;
  return Number(s);
}

// An amount of `resource` as a number: bytes for memory, units otherwise.
export function amountOf(resource: string, v: Amount): number | null {
  return isMemory(resource) ? parseMemory(v) : parseUnits(v);
}

const GIB = 2 ** 30;

// For tables: memory in GiB, GPUs and CPUs as numbers with at most 3 decimals.
export function formatAmount(resource: string, v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  if (isMemory(resource)) {
    const gib = v / GIB;
    const text = Number.isInteger(gib) ? String(gib) : gib.toFixed(gib < 10 ? 2 : 1);
    return `${text} GiB`;
  }
  return String(Math.round(v * 1000) / 1000);
}

// Memory as the config writes it (queue_codec.cpp amountToJson): the largest
// binary unit that divides it exactly, else a number of bytes; the server's
// memory reader takes whole numbers only, so "1.5Gi" must become "1536Mi".
export function memoryForConfig(bytes: number): string | number {
  const whole = Math.round(bytes);
  for (const [unit, size] of [
    ['Ti', 2 ** 40],
    ['Gi', 2 ** 30],
    ['Mi', 2 ** 20],
    ['Ki', 2 ** 10],
  ] as const) {
    if (whole >= size && whole % size === 0) return `${whole / size}${unit}`;
  }
  return whole;
}

// GPUs and CPUs as the config writes them: numbers, at most 3 decimals.
function unitsForConfig(units: number): number {
  return Math.round(units * 1000) / 1000;
}

export interface QuotaEdit {
  nominal: number | string;
  borrowing_limit?: number | string;
  lending_limit?: number | string;
}

// The body of PUT /api/v1/queues/{name}. Limits left out mean "no limit".
export interface QueueEditBody {
  project?: string;
  cohort: string;
  weight: number;
  quota: Record<string, QuotaEdit>;
}

function configAmount(resource: string, v: Amount): number | string | undefined {
  const n = amountOf(resource, v);
  if (n === null) return undefined;
  return isMemory(resource) ? memoryForConfig(n) : unitsForConfig(n);
}

// The GET shape of a queue as the PUT body that stores it unchanged.
// Resources without a nominal quota are only reported because the queue uses
// them; they are not part of its config and are left out.
export function queueToEditForm(q: Queue): QueueEditBody {
  const quota: Record<string, QuotaEdit> = {};
  for (const r of q.resources ?? []) {
    const nominal = configAmount(r.name, r.nominal);
    if (nominal === undefined) continue;
    const one: QuotaEdit = { nominal };
    const borrowing = configAmount(r.name, r.borrowing_limit);
    if (borrowing !== undefined) one.borrowing_limit = borrowing;
    const lending = configAmount(r.name, r.lending_limit);
    if (lending !== undefined) one.lending_limit = lending;
    quota[r.name] = one;
  }
  const body: QueueEditBody = { cohort: q.cohort ?? '', weight: q.weight, quota };
  const project = q.projects?.[0];
  if (project) body.project = project;
  return body;
}

// Use above nominal, or the server's own figure from its cohort accounting.
export function borrowedOf(r: QueueResource): number {
  const server = amountOf(r.name, r.borrowed as Amount);
  if (server !== null) return server;
  const used = amountOf(r.name, r.used as Amount) ?? 0;
  const nominal = amountOf(r.name, r.nominal as Amount);
  if (nominal === null) return 0;
  return Math.max(0, used - nominal);
}

// What others of the cohort use of this queue's quota; only the server knows.
export function lentOf(r: QueueResource): number {
  return amountOf(r.name, r.lent as Amount) ?? 0;
}

// GPU resources first ("gpu", then "gpu:<model>" by name), then cpu, memory,
// anything else by name.
export function sortResources<T extends { name: string }>(resources: T[]): T[] {
  const order = (name: string) => (name === 'gpu' ? 0 : name.startsWith('gpu:') ? 1 : name === 'cpu' ? 2 : name === 'memory' ? 3 : 4);
  return [...resources].sort((a, b) => order(a.name) - order(b.name) || a.name.localeCompare(b.name));
}

export interface FairShare {
  // 1 is the best standing: the least decayed GPU-hours per unit of weight.
  rank: number;
  // How many queues share the cohort (1 for a queue without one).
  of: number;
  // usage_gpu_hours / weight.
  score: number;
  cohort: string;
}

// Fair-share standing as the scheduler orders it: usage per weight, lower
// first, compared within each cohort; a queue without a cohort competes with
// no one. Equal scores share a rank.
export function fairShareRank(queues: Queue[]): Map<string, FairShare> {
  const byCohort = new Map<string, { name: string; score: number }[]>();
  for (const q of queues) {
    const cohort = q.cohort ?? '';
    const key = cohort ? `c:${cohort}` : `q:${q.name}`;
    const usage = q.usage_gpu_hours ?? 0;
    const score = q.weight > 0 ? usage / q.weight : usage > 0 ? Infinity : 0;
    const list = byCohort.get(key) ?? [];
    list.push({ name: q.name, score });
    byCohort.set(key, list);
  }
  const out = new Map<string, FairShare>();
  for (const [key, list] of byCohort) {
    const sorted = [...list].sort((a, b) => a.score - b.score);
    const cohort = key.startsWith('c:') ? key.slice(2) : '';
    sorted.forEach((e, i) => {
      const rank = i > 0 && e.score === sorted[i - 1].score ? out.get(sorted[i - 1].name)!.rank : i + 1;
      out.set(e.name, { rank, of: sorted.length, score: e.score, cohort });
    });
  }
  return out;
}

// The oldest pending job's wait, from `oldest_pending_at`; null when none.
export function oldestWait(queues: Pick<Queue, 'oldest_pending_at'>[], now = Date.now()): number | null {
  let oldest: number | null = null;
  for (const q of queues) {
    const t = q.oldest_pending_at;
    if (t && t > 0 && (oldest === null || t < oldest)) oldest = t;
  }
  return oldest === null ? null : Math.max(0, now - oldest);
}

// GPU use per queue sampled by the page at each poll: the server keeps no
// history of queue use, so the chart covers the time the page has been open.
export interface UsageHistory {
  x: number[];
  byQueue: Record<string, (number | null)[]>;
}

export const EMPTY_HISTORY: UsageHistory = { x: [], byQueue: {} };

// GPUs a queue holds now: its "gpu" resource, which counts every model.
export function gpuUsedOf(q: Queue): number {
  const r = q.resources?.find((x) => x.name === 'gpu');
  return r ? (parseUnits(r.used as Amount) ?? 0) : 0;
}

// Adds one sample at time `t`, keeping the last `max`. A queue seen for the
// first time gets nulls before (no gap filled with a guess); a queue that
// went away gets null from then on.
export function appendUsage(h: UsageHistory, queues: Queue[], t: number, max = 720): UsageHistory {
  const byQueue: Record<string, (number | null)[]> = {};
  const n = h.x.length;
  for (const [name, values] of Object.entries(h.byQueue)) byQueue[name] = [...values, null];
  for (const q of queues) {
    const values = byQueue[q.name] ?? new Array<number | null>(n + 1).fill(null);
    values[n] = gpuUsedOf(q);
    byQueue[q.name] = values;
  }
  const x = [...h.x, t];
  const drop = Math.max(0, x.length - max);
  if (drop === 0) return { x, byQueue };
  const trimmed: Record<string, (number | null)[]> = {};
  for (const [name, values] of Object.entries(byQueue)) {
    const rest = values.slice(drop);
    if (rest.some((v) => v !== null)) trimmed[name] = rest;
  }
  return { x: x.slice(drop), byQueue: trimmed };
}
