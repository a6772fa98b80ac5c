import { Document, LineCounter, isMap, isSeq, parseDocument } from 'yaml';
import type { JobSpec } from '../api/types';

// The submit form edits a flat set of values; the API takes a JobSpec. Only
// what the user set goes into the spec, so the server's defaults apply to the
// rest. Spec fields the form has no input for (min_runtime, node_selector,
// grace_period, ...) ride along in `extra`, so cloning a job or editing it in
// the YAML tab never drops them.

export interface EnvEntry {
  key?: string;
  value?: string;
}

export interface SpecFormValues {
  name?: string;
  project?: string;
  queue?: string;
  image?: string;
  run: 'command' | 'script';
  command?: string;
  script?: string;
  gpus?: number | null;
  gpuType?: string[];
  cpus?: number | null;
  memory?: string;
  replicas?: number | null;
  env?: EnvEntry[];
  workdir?: string;
  priority?: number | null;
  maxRuntime?: string;
  retries?: number | null;
  webhook?: string;
  extra?: Record<string, unknown>;
}

export function emptyFormValues(): SpecFormValues {
  return {
    name: undefined,
    project: undefined,
    queue: undefined,
    image: undefined,
    run: 'command',
    command: undefined,
    script: undefined,
    gpus: undefined,
    gpuType: [],
    cpus: undefined,
    memory: undefined,
    replicas: undefined,
    env: [],
    workdir: undefined,
    priority: undefined,
    maxRuntime: undefined,
    retries: undefined,
    webhook: undefined,
    extra: {},
  };
}

// ---- command line <-> argv ----------------------------------------------

export class ArgvError extends Error {}

// Splits one line into argv the way a POSIX shell tokenises words: blanks
// separate, '...' is literal, "..." keeps blanks and honours \" and \\, and a
// backslash outside quotes takes the next character as is. Nothing is
// expanded: the job's command runs without a shell, so $HOME stays "$HOME".
export function splitArgs(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new ArgvError('unclosed single quote');
      cur += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      let closed = false;
      while (i < line.length) {
        const d = line[i];
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === '\\' && i + 1 < line.length && (line[i + 1] === '"' || line[i + 1] === '\\')) {
          cur += line[i + 1];
          i += 2;
          continue;
        }
        cur += d;
        i++;
      }
      if (!closed) throw new ArgvError('unclosed double quote');
      inWord = true;
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new ArgvError('a backslash ends the line');
      const next = line[i + 1];
      // A backslash before a newline joins lines, as in a shell.
      if (next !== '\n') cur += next;
      inWord = inWord || next !== '\n';
      i += 2;
    } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
      i++;
    } else {
      cur += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

const PLAIN_ARG = /^[A-Za-z0-9_\-.,:/=@%+^]+$/;

function quoteArg(a: string): string {
  if (PLAIN_ARG.test(a)) return a;
  if (!a.includes("'")) return `'${a}'`;
  return `"${a.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

// The inverse of splitArgs: splitArgs(joinArgs(argv)) equals argv.
export function joinArgs(argv: string[]): string {
  return argv.map(quoteArg).join(' ');
}

// ---- form values <-> spec -----------------------------------------------

function blank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
}

// "3600" as a duration or memory is a number of seconds or bytes; the API
// takes it as a number.
function amount(text: string): string | number {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : t;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// Thrown by formToSpec for input it cannot turn into a spec; `field` is the
// form name, so the page can show it there.
export class FormValueError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export function formToSpec(v: SpecFormValues): JobSpec {
  const extra = isRecord(v.extra) ? v.extra : {};
  const spec: Record<string, unknown> = {};
  const set = (key: string, value: unknown) => {
    if (!blank(value)) spec[key] = value;
  };
  set('name', v.name?.trim());
  set('project', v.project);
  set('queue', v.queue);
  if (v.run === 'script') {
    if (!blank(v.script)) spec.script = v.script;
  } else if (!blank(v.command)) {
    let argv: string[];
    try {
      argv = splitArgs(v.command ?? '');
    } catch (e) {
      throw new FormValueError('command', `Command: ${(e as Error).message}`);
    }
    if (argv.length > 0) spec.command = argv;
  }
  set('image', v.image?.trim());

  const resources: Record<string, unknown> = isRecord(extra.resources) ? { ...extra.resources } : {};
  if (!blank(v.gpus)) resources.gpus = v.gpus;
  const types = (v.gpuType ?? []).map((t) => t.trim()).filter(Boolean);
  if (types.length > 0) resources.gpu_type = types;
  if (!blank(v.cpus)) resources.cpus = v.cpus;
  if (!blank(v.memory)) resources.memory = amount(v.memory as string);
  if (Object.keys(resources).length > 0) spec.resources = resources;

  set('replicas', v.replicas);
  const env: Record<string, string> = {};
  for (const e of v.env ?? []) {
    if (!e || blank(e.key)) continue;
    env[(e.key as string).trim()] = e.value ?? '';
  }
  if (Object.keys(env).length > 0) spec.env = env;
  set('workdir', v.workdir?.trim());
  set('priority', v.priority);
  if (!blank(v.maxRuntime)) spec.max_runtime = amount(v.maxRuntime as string);

  const retries: Record<string, unknown> = isRecord(extra.retries) ? { ...extra.retries } : {};
  if (!blank(v.retries)) retries.limit = v.retries;
  if (Object.keys(retries).length > 0) spec.retries = retries;

  const notify: Record<string, unknown> = isRecord(extra.notify) ? { ...extra.notify } : {};
  if (!blank(v.webhook)) notify.webhook = v.webhook?.trim();
  if (Object.keys(notify).length > 0) spec.notify = notify;

  for (const [k, val] of Object.entries(extra)) {
    if (k === 'resources' || k === 'retries' || k === 'notify') continue;
    if (!(k in spec)) spec[k] = val;
  }
  return orderSpec(spec) as JobSpec;
}

// The order of docs/job-spec.md, so the YAML tab reads like the docs.
const ORDER = [
  'name',
  'project',
  'queue',
  'command',
  'script',
  'image',
  'resources',
  'replicas',
  'env',
  'workdir',
  'priority',
  'max_runtime',
  'min_runtime',
  'node_selector',
  'same_label',
  'grace_period',
  'retries',
  'notify',
];
const RESOURCE_ORDER = ['gpus', 'gpu_type', 'cpus', 'memory'];

function byOrder(obj: Record<string, unknown>, order: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of order) if (k in obj) out[k] = obj[k];
  for (const k of Object.keys(obj)) if (!(k in out)) out[k] = obj[k];
  return out;
}

function orderSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const out = byOrder(spec, ORDER);
  if (isRecord(out.resources)) out.resources = byOrder(out.resources, RESOURCE_ORDER);
  return out;
}

function num(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function str(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return String(v);
}

function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

// A string, or a number written as one (memory: 32Gi or 1073741824).
function asText(v: unknown): string | undefined {
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

// A spec value as the form shows it; undefined where the form cannot.
type Convert = (v: unknown) => unknown;

// A spec from the API or the YAML tab back into form values. Whatever the
// form cannot show goes to `extra` unchanged (a string "gpus: lots" too, so
// the server can name it rather than the form silently dropping it).
export function specToForm(input: JobSpec | Record<string, unknown>): SpecFormValues {
  const spec: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  const v = emptyFormValues();
  const extra: Record<string, unknown> = {};
  const form = v as unknown as Record<string, unknown>;
  const take = (key: string) => {
    const val = spec[key];
    delete spec[key];
    return val;
  };
  // Spec key into form field; the value stays in `extra` where it does not convert.
  const move = (key: string, field: keyof SpecFormValues, convert: Convert) => {
    const val = take(key);
    if (val === undefined) return;
    const out = convert(val);
    if (out !== undefined) form[field] = out;
    else extra[key] = val;
  };
  // A spec object whose members the form shows some of; the rest stays in `extra`.
  const moveMembers = (key: string, members: [string, keyof SpecFormValues, Convert][]) => {
    const val = take(key);
    if (val === undefined) return;
    if (!isRecord(val)) {
      extra[key] = val;
      return;
    }
    const rest: Record<string, unknown> = { ...val };
    for (const [member, field, convert] of members) {
      const out = rest[member] === undefined ? undefined : convert(rest[member]);
      if (out === undefined) continue;
      form[field] = out;
      delete rest[member];
    }
    if (Object.keys(rest).length > 0) extra[key] = rest;
  };

  move('name', 'name', asString);
  move('project', 'project', asString);
  move('queue', 'queue', asString);
  move('command', 'command', (c) =>
    Array.isArray(c) && c.every((a) => typeof a === 'string' || typeof a === 'number') ? joinArgs(c.map(String)) : undefined,
  );
  move('script', 'script', asString);
  v.run = v.script !== undefined && v.command === undefined ? 'script' : 'command';
  move('image', 'image', asString);
  moveMembers('resources', [
    ['gpus', 'gpus', num],
    ['gpu_type', 'gpuType', (t) => (Array.isArray(t) ? t.map(String) : typeof t === 'string' ? [t] : undefined)],
    ['cpus', 'cpus', num],
    ['memory', 'memory', asText],
  ]);
  move('replicas', 'replicas', num);
  move('env', 'env', (e) => (isRecord(e) ? Object.entries(e).map(([key, value]) => ({ key, value: str(value) ?? '' })) : undefined));
  move('workdir', 'workdir', asString);
  move('priority', 'priority', asNumber);
  move('max_runtime', 'maxRuntime', asText);
  moveMembers('retries', [['limit', 'retries', asNumber]]);
  moveMembers('notify', [['webhook', 'webhook', asString]]);

  for (const [k, val] of Object.entries(spec)) extra[k] = val;
  v.extra = extra;
  return v;
}

// ---- spec <-> YAML ----------------------------------------------------------

export function specToYaml(spec: JobSpec): string {
  if (Object.keys(spec).length === 0) return '';
  const doc = new Document(spec);
  // Short lists read better on one line, as in docs/job-spec.md.
  for (const path of [['command'], ['resources', 'gpu_type'], ['notify', 'on']]) {
    const node = doc.getIn(path, true);
    if (isSeq(node)) node.flow = true;
  }
  return doc.toString({ lineWidth: 0, blockQuote: 'literal', flowCollectionPadding: false });
}

export interface YamlProblem {
  line?: number;
  column?: number;
  message: string;
}

export type YamlParse = { ok: true; spec: JobSpec } | { ok: false; problems: YamlProblem[] };

export function yamlToSpec(text: string): YamlParse {
  if (text.trim() === '') return { ok: true, spec: {} };
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        line: e.linePos?.[0]?.line,
        column: e.linePos?.[0]?.col,
        // The first line of yaml's message; the rest repeats the source.
        message: e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, ''),
      })),
    };
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return { ok: true, spec: {} };
  if (!isRecord(value)) {
    return { ok: false, problems: [{ line: 1, column: 1, message: 'a job spec is a mapping of fields (name: ..., command: ...)' }] };
  }
  return { ok: true, spec: value as JobSpec };
}

// The line of the YAML text where a dotted spec field (the API's `field`)
// is, so an API error on the YAML tab can point at it.
export function yamlLineOf(text: string, field: string): number | undefined {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc });
  if (doc.errors.length > 0) return undefined;
  const path = field.split('.');
  for (let n = path.length; n > 0; n--) {
    const parent = n > 1 ? doc.getIn(path.slice(0, n - 1), true) : doc.contents;
    if (!isMap(parent)) continue;
    const pair = parent.items.find((p) => {
      const k = p.key as { value?: unknown } | null;
      return k && String(k.value) === path[n - 1];
    });
    const key = pair?.key as { range?: [number, number, number] } | undefined;
    if (key?.range) return lc.linePos(key.range[0]).line;
  }
  return undefined;
}
