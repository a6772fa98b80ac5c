import type { SpecFormValues } from './spec';

// The API names the offending spec field with a dotted path
// ("resources.gpus", "env.SEED"); the submit form has its own flat names.
// A field with no input of its own gives null, and the page shows the error
// above the form instead.

export type FormPath = (string | number)[];

const DIRECT: Record<string, string> = {
  name: 'name',
  project: 'project',
  queue: 'queue',
  image: 'image',
  replicas: 'replicas',
  workdir: 'workdir',
  priority: 'priority',
  max_runtime: 'maxRuntime',
  'resources.gpus': 'gpus',
  'resources.gpu_type': 'gpuType',
  'resources.cpus': 'cpus',
  'resources.memory': 'memory',
  retries: 'retries',
  'retries.limit': 'retries',
  notify: 'webhook',
  'notify.webhook': 'webhook',
};

export function formPathFor(field: string | undefined, values?: Partial<SpecFormValues>): FormPath | null {
  if (!field) return null;
  if (DIRECT[field]) return [DIRECT[field]];
  const parts = field.split('.');
  const head = parts[0];
  if (head === 'command' || head === 'script') {
    return [values?.run === 'script' ? 'script' : 'command'];
  }
  if (head === 'resources' && parts[1] === 'gpu_type') return ['gpuType'];
  if (head === 'env' && parts.length >= 2) {
    const key = parts.slice(1).join('.');
    const i = (values?.env ?? []).findIndex((e) => e?.key?.trim() === key);
    return i >= 0 ? ['env', i, 'key'] : null;
  }
  return null;
}

// What the page shows for a field it has no input for: "grace_period: ...".
export function describeField(field: string | undefined, message: string): string {
  return field ? `${field}: ${message}` : message;
}
