import { useEffect, useRef, useState } from 'react';
import { Alert, Empty, Timeline, Typography } from 'antd';
import { api } from '../api/client';
import { usePoll } from '../api/usePoll';
import type { JobEvent } from '../api/types';
import { formatTime } from '../lib/time';

// Keeps this many events on the page; a job that retried for days can have
// thousands and only the recent ones matter here.
const MAX_EVENTS = 2000;

// The job's timeline, read incrementally (`after` the last seq seen) so a
// poll costs nothing when nothing happened.
export function EventsTimeline({ jobId, active }: { jobId: number; active: boolean }) {
  const [events, setEvents] = useState<JobEvent[]>([]);
  const lastSeq = useRef(0);
  const forJob = useRef(jobId);

  useEffect(() => {
    forJob.current = jobId;
    lastSeq.current = 0;
    setEvents([]);
  }, [jobId]);

  const poll = usePoll(
    async (signal) => {
      const id = jobId;
      const r = await api<{ events: JobEvent[] }>(`/api/v1/jobs/${id}/events?after=${lastSeq.current}`, { signal });
      if (forJob.current !== id) return true;
      const fresh = r.events.filter((e) => e.seq > lastSeq.current);
      if (fresh.length) {
        lastSeq.current = fresh[fresh.length - 1].seq;
        setEvents((prev) => [...prev, ...fresh].slice(-MAX_EVENTS));
      }
      return true;
    },
    // A finished job still gets its last events (the exit, a webhook), so it
    // is read a while longer, just less often.
    active ? 2000 : 10000,
    [jobId],
  );

  if (poll.error && events.length === 0) {
    return <Alert type="error" showIcon title={`Could not load events: ${poll.error}`} />;
  }
  if (!poll.loading && events.length === 0) {
    return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No events yet." />;
  }
  return (
    <div data-testid="events-timeline">
      <Timeline
        items={events.map((e) => ({
          key: e.seq,
          color: e.level === 'warning' ? 'red' : 'blue',
          content: (
            <div>
              <Typography.Text strong type={e.level === 'warning' ? 'danger' : undefined}>
                {e.reason}
              </Typography.Text>{' '}
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {formatTime(e.time)}
              </Typography.Text>
              <div style={e.level === 'warning' ? { color: 'var(--ant-color-error, #cf1322)' } : undefined}>
                {e.message}
              </div>
            </div>
          ),
        }))}
      />
    </div>
  );
}
