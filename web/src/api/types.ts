// Shapes of the REST API's answers (docs/api.md). Times are milliseconds
// since the epoch; the UI shows them in the browser's time zone.

export type JobState =
  | 'pending'
  | 'scheduled'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'preempted';

export const ACTIVE_STATES: JobState[] = ['pending', 'scheduled', 'running'];
export const ALL_STATES: JobState[] = ['pending', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled'];

export interface Resources {
  gpus?: number | string;
  gpu_type?: string[];
  cpus?: number;
  memory?: string | number;
}

export interface JobSpec {
  name?: string;
  project?: string;
  queue?: string;
  command?: string[];
  script?: string;
  image?: string;
  resources?: Resources;
  replicas?: number;
  env?: Record<string, string>;
  workdir?: string;
  priority?: number | string;
  max_runtime?: string | number;
  min_runtime?: string | number;
  node_selector?: Record<string, string>;
  same_label?: string;
  grace_period?: string | number;
  retries?: { limit?: number; backoff?: string | number };
  notify?: { webhook?: string; on?: string[] };
}

export interface Replica {
  node: string;
  gpus: number[];
  gpu_milli?: number[] | number;
}

export interface Attempt {
  job: number;
  number: number;
  state: string;
  replicas: Replica[];
  master_port?: number;
  pids?: number[];
  created_at?: number;
  started_at?: number | null;
  finished_at?: number | null;
  exit_code?: number | null;
  reason?: string;
}

export interface Waiting {
  queue?: string;
  position?: number;
  message?: string;
  estimated_start?: number | null;
}

export interface Job {
  id: number;
  name: string;
  project: string;
  user: string;
  state: JobState;
  spec: JobSpec;
  created_at: number;
  updated_at?: number;
  started_at?: number | null;
  finished_at?: number | null;
  attempts: number;
  exit_code?: number | null;
  reason?: string;
  not_before?: number | null;
  cancel_requested_at?: number | null;
  preempted_by?: number | null;
  preemptions?: number;
  attempt?: Attempt;
  waiting?: Waiting;
}

export interface JobList {
  jobs: Job[];
  next_before: number | null;
}

export interface JobEvent {
  seq: number;
  job: number;
  time: number;
  level: 'normal' | 'warning';
  reason: string;
  message: string;
}

export interface Gpu {
  index: number;
  uuid?: string;
  model: string;
  memory?: string;
  memory_bytes?: number;
  healthy: boolean;
  unhealthy_reason?: string;
  job?: number | null;
  jobs?: number[];
  used?: string | number;
  // Live state from the GPU monitor; null where no NVML sampler runs.
  util_percent?: number | null;
  memory_used_bytes?: number | null;
  history?: [number, number][];
  idle_since?: number | null;
  ghost_pids?: number[];
}

export interface NodeInfo {
  name: string;
  labels?: Record<string, string>;
  cpus: Amount;
  memory_bytes: number;
  used_cpus?: Amount;
  used_memory_bytes?: number;
  gpus: Gpu[];
}

// Amounts are exact decimal strings ("8", "0.5", "512Gi"); null means no limit.
// Read them with lib/queues.ts (amountOf, parseMemory).
export type Amount = string | number;

export interface QueueResource {
  name: string; // "gpu", "gpu:A100", "cpu", "memory"
  nominal: Amount | null;
  borrowing_limit: Amount | null;
  lending_limit: Amount | null;
  used: Amount;
  borrowed?: Amount;
  lent?: Amount;
}

export interface Queue {
  name: string;
  cohort?: string | null;
  weight: number;
  projects: string[];
  resources: QueueResource[];
  usage_gpu_hours?: number;
  pending: number;
  running: number;
  oldest_pending_at?: number | null;
}

export interface ProjectRole {
  project: string;
  role: Role;
}

export type Role = 'admin' | 'engineer' | 'data-engineer' | 'viewer';

export interface WhoAmI {
  user: string;
  admin: boolean;
  projects: ProjectRole[];
  auth?: {
    kind: 'session' | 'token';
    token_id?: number;
    token_name?: string;
    project?: string | null;
    expires_at?: number | null;
  };
  csrf_token?: string;
}

export interface MetricSummary {
  name: string;
  count: number;
  latest: MetricPoint;
}

export interface MetricPoint {
  id: number;
  step: number | null;
  value: number;
  time: number;
}
