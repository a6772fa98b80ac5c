import { vi } from 'vitest';

// One request the page sent.
export interface Call {
  method: string;
  // Path and query, as the page wrote it.
  url: string;
  path: string;
  search: string;
  // The JSON body parsed, other text as is.
  body: unknown;
  headers: Record<string, string>;
}

// A value (sent as JSON), a Response, or undefined for 204 No Content.
export type Answer = Response | object | undefined;
export type Responder = (call: Call & { query: URLSearchParams }) => Answer;
// A Response is read once: answer with a function where a route is asked twice.
export type Route = Answer | Responder;

export function reply(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new Response(text, { status, headers: { 'Content-Type': 'application/json', ...headers } });
}

export function notFound(message = 'no route'): Response {
  return reply({ error: { code: 'not_found', message } }, 404);
}

function parseBody(body: RequestInit['body']): unknown {
  if (typeof body !== 'string') return undefined;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

// Stands in for fetch: answers "METHOD /path" (query ignored) from `routes`,
// 404 for anything else, and records every call in the list it returns.
export function stubApi(routes: Record<string, Route>): Call[] {
  const calls: Call[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
      const url = String(input);
      const parsed = new URL(url, 'http://localhost');
      const call: Call = {
        method: init.method ?? 'GET',
        url,
        path: parsed.pathname,
        search: parsed.search,
        body: parseBody(init.body),
        headers: (init.headers ?? {}) as Record<string, string>,
      };
      calls.push(call);
      const key = `${call.method} ${call.path}`;
      if (!(key in routes)) return notFound(`no route ${key}`);
      const route = routes[key];
      const answer = typeof route === 'function' ? (route as Responder)({ ...call, query: parsed.searchParams }) : route;
      if (answer instanceof Response) return answer;
      if (answer === undefined) return new Response(null, { status: 204 });
      return reply(answer);
    }),
  );
  return calls;
}
