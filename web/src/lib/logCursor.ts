// The pure parts of reading a job's log in pieces: what the server said about
// where to continue, and how the kept text grows without growing forever.

// The browser keeps at most this much log text; a long job's log would
// otherwise slow the page down until the tab dies.
export const LOG_CAP_BYTES = 5 * 1024 * 1024;

// Lines asked for on the first read, so opening a long log is quick.
export const FIRST_TAIL_LINES = 2000;

export interface LogChunkInfo {
  // Where to continue; null when the server does not do cursor reads (then
  // the reader falls back to re-reading the tail).
  cursor: string | null;
  attempt: number | null;
  // True when the attempt ended and everything it wrote was sent.
  done: boolean;
  // True when bytes were rotated away before they were read.
  gap: boolean;
}

interface HeaderSource {
  get(name: string): string | null;
}

export function parseLogHeaders(headers: HeaderSource): LogChunkInfo {
  const cursor = headers.get('X-Log-Cursor');
  const attemptText = headers.get('X-Log-Attempt');
  const attempt = attemptText !== null && /^\d+$/.test(attemptText.trim()) ? Number(attemptText.trim()) : null;
  const flag = (name: string) => (headers.get(name) ?? '').trim().toLowerCase() === 'true';
  return { cursor: cursor && cursor.trim() ? cursor.trim() : null, attempt, done: flag('X-Log-Done'), gap: flag('X-Log-Gap') };
}

export interface LogQuery {
  attempt?: number | null;
  replica: number;
  cursor?: string | null;
  tail?: number;
}

// The first read is `cursor=start` with the tail; the answer's X-Log-Cursor
// says where the next read starts. A server without cursor reads ignores
// `cursor` and answers the tail without the header.
export function logUrl(jobId: number | string, q: LogQuery): string {
  const params = new URLSearchParams();
  if (q.attempt) params.set('attempt', String(q.attempt));
  params.set('replica', String(q.replica));
  if (q.cursor) {
    params.set('cursor', q.cursor);
  } else {
    params.set('cursor', 'start');
    if (q.tail !== undefined) params.set('tail', String(q.tail));
  }
  return `/api/v1/jobs/${jobId}/logs?${params.toString()}`;
}

// The link to the whole log file of one attempt and replica.
export function logDownloadUrl(jobId: number | string, attempt: number, replica: number): string {
  return `/api/v1/jobs/${jobId}/logs?attempt=${attempt}&replica=${replica}`;
}

export interface CappedText {
  text: string;
  // True once older text was dropped to stay under the cap.
  truncated: boolean;
}

// Keeps the newest `cap` characters, cut at a line start so the first line
// shown is whole. (Characters, not bytes: close enough for a memory bound and
// it never splits a character.)
export function capText(text: string, cap = LOG_CAP_BYTES): CappedText {
  if (text.length <= cap) return { text, truncated: false };
  let start = text.length - cap;
  if (text[start - 1] !== '\n') {
    const nl = text.indexOf('\n', start);
    if (nl !== -1 && nl + 1 < text.length) start = nl + 1;
  }
  return { text: text.slice(start), truncated: true };
}

export function appendCapped(prev: CappedText, chunk: string, cap = LOG_CAP_BYTES): CappedText {
  if (!chunk) return prev;
  const next = capText(prev.text + chunk, cap);
  return { text: next.text, truncated: prev.truncated || next.truncated };
}

export interface LogSearch {
  // The lines to show, each split into plain and matching parts.
  lines: { parts: { text: string; match: boolean }[] }[];
  matches: number;
  matchingLines: number;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Case-insensitive plain-text search. With onlyMatching, only lines with a
// match are returned; the count covers the whole text either way.
export function searchLog(text: string, needle: string, onlyMatching: boolean, maxLines = 20000): LogSearch {
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  if (!needle) {
    return { lines: lines.slice(-maxLines).map((l) => ({ parts: [{ text: l, match: false }] })), matches: 0, matchingLines: 0 };
  }
  const re = new RegExp(escapeRegExp(needle), 'gi');
  const out: LogSearch['lines'] = [];
  let matches = 0;
  let matchingLines = 0;
  for (const line of lines) {
    const parts: { text: string; match: boolean }[] = [];
    let last = 0;
    let found = 0;
    re.lastIndex = 0;
    for (let m = re.exec(line); m !== null; m = re.exec(line)) {
      if (m.index > last) parts.push({ text: line.slice(last, m.index), match: false });
      parts.push({ text: m[0], match: true });
      last = m.index + m[0].length;
      found++;
    }
    if (found > 0) {
      matches += found;
      matchingLines++;
      if (last < line.length) parts.push({ text: line.slice(last), match: false });
      out.push({ parts });
    } else if (!onlyMatching) {
      out.push({ parts: [{ text: line, match: false }] });
    }
  }
  return { lines: out.slice(-maxLines), matches, matchingLines };
}
