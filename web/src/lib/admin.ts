import { ApiError, errorMessage } from '../api/client';
import type { Role } from '../api/types';

// Shapes of the identity API (src/api/identity_routes.cpp). Times are ms
// since the epoch; 0 or null means "none".

export interface User {
  name: string;
  admin: boolean;
  disabled: boolean;
  has_password: boolean;
  created_at: number;
  locked_until: number;
}

export interface Project {
  name: string;
  created_at: number;
  role?: Role | null;
  // Present only for those who may change it (admins, project admins).
  webhook_url?: string;
}

export interface Member {
  user: string;
  role: Role;
}

export interface ApiToken {
  id: number;
  user: string;
  name: string;
  prefix: string;
  project: string | null;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  live: boolean;
  // Only in the answer to POST /api/v1/tokens, never again.
  token?: string;
}

export interface AuditRecord {
  seq: number;
  at: number;
  user: string;
  address: string;
  method: string;
  path: string;
  status: number;
  detail: string;
}

export interface AuditPage {
  records: AuditRecord[];
  next_before: number | null;
}

export const ROLES: Role[] = ['admin', 'engineer', 'data-engineer', 'viewer'];

// --- names -----------------------------------------------------------------

// The server's rule for user, project, queue and cohort names.
export const NAME_RE = /^[a-z0-9._-]{1,64}$/;
export const NAME_RULE_TEXT = "use 1-64 lower-case letters, digits, '.', '_' or '-'";

export function validName(name: string): boolean {
  return NAME_RE.test(name);
}

// An antd Form rule; empty values are left to `required`.
export const nameRule = {
  validator: async (_: unknown, value: unknown) => {
    if (value === undefined || value === null || value === '') return;
    if (!validName(String(value))) throw new Error(NAME_RULE_TEXT);
  },
};

// Token names are labels: 1-64 printable ASCII characters.
export function validTokenName(name: string): boolean {
  return name.length >= 1 && name.length <= 64 && /^[\x20-\x7e]+$/.test(name);
}

// "30d", "12h", "90m", "45s" or whole seconds, as the server reads expires_in.
export function validExpiresIn(text: string): boolean {
  const m = /^(\d{1,12})([smhd]?)$/.exec(text.trim());
  if (!m) return false;
  const per = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  const seconds = Number(m[1]) * per;
  return seconds > 0 && seconds <= 366 * 86400;
}

// --- errors at fields ------------------------------------------------------

export type FieldPath = (string | number)[];

export interface FieldError {
  name: FieldPath;
  errors: string[];
}

// Where an API error belongs: at a form field (when the server named one the
// form has) or in a message above the form. `mapField` turns the server's
// dotted field into the form's path, or null when the form has no such field.
export function placeError(
  e: unknown,
  mapField: (field: string) => FieldPath | null = (f) => f.split('.'),
): { field: FieldError | null; message: string } {
  const message = errorMessage(e);
  if (e instanceof ApiError && e.field) {
    const name = mapField(e.field);
    if (name) return { field: { name, errors: [message] }, message };
  }
  return { field: null, message };
}

// --- queue editor ----------------------------------------------------------

export interface QuotaLimits {
  nominal: number | string;
  borrowing_limit?: number | string;
  lending_limit?: number | string;
}

// The body of PUT /api/v1/queues/{name}: one entry of scheduler.queues.
export interface QueuePutBody {
  project?: string;
  cohort?: string;
  weight?: number;
  quota: Record<string, QuotaLimits>;
}

// The PUT answer: the queue as stored, and a note worth showing.
export interface QueuePutReply extends QueuePutBody {
  name: string;
  note?: string;
}

export interface QuotaRow {
  resource: string;
  nominal: string;
  borrowing_limit?: string;
  lending_limit?: string;
}

export interface QueueFormValues {
  name: string;
  project: string;
  cohort?: string;
  weight: number;
  quota: QuotaRow[];
}

export const QUOTA_RESOURCE_TEXT = 'use gpu, gpu:<model> (e.g. gpu:A100), cpu or memory';

export function knownQuotaResource(res: string): boolean {
  return res === 'gpu' || res === 'cpu' || res === 'memory' || (res.startsWith('gpu:') && res.length > 4);
}

const QUANTITY_RE = /^(\d+(\.\d{1,3})?|\d+m)$/;
const MEMORY_RE = /^\d+(Ki|Mi|Gi|Ti|K|k|M|G|T)?$/;

// Why `amount` is not a valid amount of `resource`, or null when it is.
export function amountProblem(resource: string, amount: string): string | null {
  const text = amount.trim();
  if (resource === 'memory') {
    return MEMORY_RE.test(text) ? null : 'a whole amount with an optional unit, e.g. 512Gi, 64Mi or 1000000';
  }
  return QUANTITY_RE.test(text) ? null : 'a non-negative number such as 8 or 0.5 (at most 3 decimals)';
}

function amountText(v: number | string | null | undefined): string | undefined {
  if (v === null || v === undefined || v === '') return undefined;
  return String(v);
}

// GPU and CPU amounts go as numbers, as the config file writes them; memory
// keeps its unit. A form string the server would read differently ("250m")
// goes as typed.
function amountValue(resource: string, text: string): number | string {
  const t = text.trim();
  if (resource !== 'memory' && /^\d+(\.\d{1,3})?$/.test(t)) return Number(t);
  return t;
}

// The editor starts from queueToEditForm (lib/queues.ts), which turns the
// GET shape into this PUT body; these two map it to the form's rows and back.
export function queueFormFromBody(name: string, body: QueuePutBody): QueueFormValues {
  return {
    name,
    project: body.project || name,
    cohort: body.cohort || undefined,
    weight: body.weight ?? 1,
    quota: Object.entries(body.quota ?? {}).map(([resource, l]) => ({
      resource,
      nominal: String(l.nominal),
      borrowing_limit: amountText(l.borrowing_limit),
      lending_limit: amountText(l.lending_limit),
    })),
  };
}

export function emptyQueueForm(): QueueFormValues {
  return { name: '', project: '', weight: 1, quota: [{ resource: 'gpu', nominal: '' }] };
}

// The PUT body from the editor. Empty limits are left out: no limit.
export function queuePutBodyFromForm(v: QueueFormValues): QueuePutBody {
  const quota: Record<string, QuotaLimits> = {};
  for (const row of v.quota ?? []) {
    const resource = row.resource.trim();
    const one: QuotaLimits = { nominal: amountValue(resource, row.nominal) };
    const borrowing = row.borrowing_limit?.trim();
    const lending = row.lending_limit?.trim();
    if (borrowing) one.borrowing_limit = amountValue(resource, borrowing);
    if (lending) one.lending_limit = amountValue(resource, lending);
    quota[resource] = one;
  }
  const body: QueuePutBody = {
    project: v.project?.trim() || v.name.trim(),
    weight: Number(v.weight),
    quota,
  };
  const cohort = v.cohort?.trim();
  if (cohort) body.cohort = cohort;
  return body;
}

// The server names a quota field "quota.gpu:A100.lending_limit"; the form
// holds quota rows, so find the row of that resource.
export function queueFieldPath(field: string, rows: QuotaRow[]): FieldPath | null {
  if (field === 'name' || field === 'project' || field === 'cohort' || field === 'weight') return [field];
  if (!field.startsWith('quota.')) return null;
  const rest = field.slice('quota.'.length);
  for (const key of ['nominal', 'borrowing_limit', 'lending_limit'] as const) {
    if (rest.endsWith('.' + key)) {
      const idx = rows.findIndex((r) => r.resource?.trim() === rest.slice(0, -key.length - 1));
      return idx >= 0 ? ['quota', idx, key] : null;
    }
  }
  const idx = rows.findIndex((r) => r.resource?.trim() === rest);
  return idx >= 0 ? ['quota', idx, 'resource'] : null;
}

// "8 (borrow ≤ 4, lend ≤ 8)": a quota for a table cell.
export function describeQuota(name: string, l: QuotaLimits): string {
  const extra: string[] = [];
  if (l.borrowing_limit !== undefined) extra.push(`borrow ≤ ${l.borrowing_limit}`);
  if (l.lending_limit !== undefined) extra.push(`lend ≤ ${l.lending_limit}`);
  return `${name} ${l.nominal}${extra.length ? ` (${extra.join(', ')})` : ''}`;
}

// --- tokens ----------------------------------------------------------------

export type TokenStatus = 'live' | 'revoked' | 'expired';

export function tokenStatus(t: ApiToken, now = Date.now()): TokenStatus {
  if (t.revoked_at) return 'revoked';
  if (t.live) return 'live';
  if (t.expires_at && t.expires_at <= now) return 'expired';
  return 'revoked';
}
