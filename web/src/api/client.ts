// One way to call the REST API: same origin, the session cookie, the CSRF
// token on every state-changing request, and one error type that carries the
// API's {error:{code,message,field}} so forms can show it at the field.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const CSRF_KEY = 'trainyard.csrf';

export function setCsrfToken(token: string | null): void {
  if (token) sessionStorage.setItem(CSRF_KEY, token);
  else sessionStorage.removeItem(CSRF_KEY);
}

export function csrfToken(): string | null {
  return sessionStorage.getItem(CSRF_KEY);
}

// Called on any 401 so the app can drop its user and show the login page.
let onUnauthenticated: (() => void) | null = null;
export function setUnauthenticatedHandler(handler: (() => void) | null): void {
  onUnauthenticated = handler;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  // Sent as is with this content type (the YAML tab posts YAML text).
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

async function errorFrom(res: Response): Promise<ApiError> {
  let code = 'unknown';
  let message = `${res.status} ${res.statusText}`;
  let field: string | undefined;
  try {
    const body = await res.json();
    if (body && typeof body === 'object' && body.error) {
      code = String(body.error.code ?? code);
      message = String(body.error.message ?? message);
      if (body.error.field) field = String(body.error.field);
    }
  } catch {
    // Not JSON (a proxy's page, say): keep the status line.
  }
  if (res.status === 429) {
    const retry = res.headers.get('Retry-After');
    if (retry && !message.includes('retry')) message += ` (retry in ${retry} s)`;
  }
  return new ApiError(res.status, code, message, field);
}

export async function apiFetch(path: string, opts: RequestOptions = {}): Promise<Response> {
  const method = opts.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  let body: string | undefined;
  if (opts.rawBody !== undefined) {
    body = opts.rawBody;
    headers['Content-Type'] = opts.contentType ?? 'text/plain';
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] = 'application/json';
  }
  if (method !== 'GET' && method !== 'HEAD') {
    const token = csrfToken();
    if (token) headers['X-CSRF-Token'] = token;
  }
  const res = await fetch(path, {
    method,
    headers,
    body,
    credentials: 'same-origin',
    signal: opts.signal,
  });
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && onUnauthenticated && !path.endsWith('/login')) onUnauthenticated();
    throw err;
  }
  return res;
}

export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await apiFetch(path, opts);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

// Builds a query string from the defined, non-empty values only.
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// A short message for people: the API's words, never raw JSON.
export function errorMessage(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
