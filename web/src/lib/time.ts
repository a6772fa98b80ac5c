import dayjs from 'dayjs';
import relativeTime from 'dayjs/plugin/relativeTime';

dayjs.extend(relativeTime);

// Times come from the API as milliseconds since the epoch and are shown in
// the browser's own time zone.
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms <= 0) return '—';
  return dayjs(ms).format('YYYY-MM-DD HH:mm:ss');
}

export function fromNow(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined || ms <= 0) return '—';
  return dayjs(ms).from(dayjs(now));
}

// "1h 02m", "3m 05s", "12s": a duration for tables.
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms < 0) return '—';
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  if (d > 0) return `${d}d ${two(h)}h`;
  if (h > 0) return `${h}h ${two(m)}m`;
  if (m > 0) return `${m}m ${two(sec)}s`;
  return `${sec}s`;
}
