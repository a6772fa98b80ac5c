import { useEffect, useMemo, useRef } from 'react';
import { Alert, Card, Col, Row, Statistic, Table, Tooltip, Typography } from 'antd';
import { Link } from 'react-router-dom';
import dayjs from 'dayjs';
import { ApiError, api, query } from '../api/client';
import type { Job, JobList, NodeInfo, Queue } from '../api/types';
import { usePoll } from '../api/usePoll';
import { useAuth } from '../auth/AuthContext';
import { GpuGrid, type JobLabel } from '../components/GpuGrid';
import { StateTag } from '../components/StateTag';
import { gpuState } from '../lib/gpuState';
import { oldestWait } from '../lib/queues';
import { formatDuration, formatTime, fromNow } from '../lib/time';

const POLL_MS = 5000;

// GET /api/v1/jobs/counts: jobs not finished now, finished ones since `since`.
interface JobCounts {
  since: number;
  by_state: Record<string, number | undefined>;
}

export interface DayCounts {
  pending: number;
  scheduled: number;
  running: number;
  succeeded: number;
  failed: number;
  // Counted from a capped jobs list: there may be more.
  capped: boolean;
}

const LIST_CAP = 1000;

async function countsFromList(since: number, signal: AbortSignal): Promise<DayCounts> {
  const list = (state: string) =>
    api<JobList>(`/api/v1/jobs${query({ state, limit: LIST_CAP })}`, { signal }).then((r) => r.jobs);
  const [pending, scheduled, running, succeeded, failed] = await Promise.all(
    ['pending', 'scheduled', 'running', 'succeeded', 'failed'].map(list),
  );
  const today = (jobs: Job[]) => jobs.filter((j) => (j.finished_at ?? 0) >= since).length;
  return {
    pending: pending.length,
    scheduled: scheduled.length,
    running: running.length,
    succeeded: today(succeeded),
    failed: today(failed),
    capped: [pending, scheduled, running, succeeded, failed].some((l) => l.length >= LIST_CAP),
  };
}

// "none" only when nothing waits; a server that does not report the oldest
// pending time leaves it unknown.
function waitText(pending: number, wait: number | null): string {
  if (wait !== null) return formatDuration(wait);
  return pending === 0 ? 'none' : '—';
}

function runtime(j: Job): string {
  if (!j.started_at) return '—';
  return formatDuration((j.finished_at || Date.now()) - j.started_at);
}

function StatCard({ title, testId, value, suffix, note, loading }: {
  title: string;
  testId: string;
  value: number | string | undefined;
  suffix?: string;
  note?: string;
  loading: boolean;
}) {
  return (
    <Card size="small" style={{ height: '100%' }} data-testid={testId}>
      <Statistic title={title} value={value ?? '—'} suffix={suffix} loading={loading && value === undefined} />
      {note && (
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {note}
        </Typography.Text>
      )}
    </Card>
  );
}

export default function OverviewPage() {
  const { me } = useAuth();
  useEffect(() => {
    document.title = 'Overview · Trainyard';
  }, []);

  const nodes = usePoll((signal) => api<{ nodes: NodeInfo[] }>('/api/v1/nodes', { signal }).then((r) => r.nodes), POLL_MS, []);
  const queues = usePoll((signal) => api<{ queues: Queue[] }>('/api/v1/queues', { signal }).then((r) => r.queues), POLL_MS, []);
  // Names of the jobs on the GPUs, for the tiles and their tooltips.
  const running = usePoll(
    (signal) => api<JobList>(`/api/v1/jobs${query({ state: 'running', limit: 500 })}`, { signal }).then((r) => r.jobs),
    POLL_MS,
    [],
  );
  // Servers without /jobs/counts answer 404: remember it and count from the
  // jobs list from then on, instead of asking again every poll.
  const noCountsRoute = useRef(false);
  const counts = usePoll(
    async (signal): Promise<DayCounts> => {
      const since = dayjs().startOf('day').valueOf();
      if (!noCountsRoute.current) {
        try {
          const r = await api<JobCounts>(`/api/v1/jobs/counts${query({ since })}`, { signal });
          const n = (s: string) => r.by_state?.[s] ?? 0;
          return {
            pending: n('pending'),
            scheduled: n('scheduled'),
            running: n('running'),
            succeeded: n('succeeded'),
            failed: n('failed'),
            capped: false,
          };
        } catch (e) {
          if (!(e instanceof ApiError && e.status === 404)) throw e;
          noCountsRoute.current = true;
        }
      }
      return countsFromList(since, signal);
    },
    POLL_MS,
    [],
  );
  const mine = usePoll(
    (signal) => api<JobList>(`/api/v1/jobs${query({ user: me?.user, limit: 10 })}`, { signal }).then((r) => r.jobs),
    POLL_MS,
    [me?.user],
  );

  const jobLabels = useMemo(() => {
    const m = new Map<number, JobLabel>();
    for (const j of running.data ?? []) m.set(j.id, j);
    for (const j of mine.data ?? []) m.set(j.id, j);
    return m;
  }, [running.data, mine.data]);

  const gpus = useMemo(() => {
    const all = (nodes.data ?? []).flatMap((n) => n.gpus.map((g) => gpuState(g).state));
    const count = (s: string) => all.filter((x) => x === s).length;
    return { total: all.length, free: count('free'), unhealthy: count('unhealthy'), idle: count('idle'), ghost: count('ghost') };
  }, [nodes.data]);

  const q = queues.data;
  const queueTotals = q && {
    pending: q.reduce((s, x) => s + (x.pending ?? 0), 0),
    running: q.reduce((s, x) => s + (x.running ?? 0), 0),
    wait: oldestWait(q),
  };
  const c = counts.data;
  const gpuNote = [
    gpus.unhealthy && `${gpus.unhealthy} unhealthy`,
    gpus.idle && `${gpus.idle} idle while held`,
    gpus.ghost && `${gpus.ghost} with ghost processes`,
  ]
    .filter(Boolean)
    .join(', ');
  const plus = c?.capped ? '+' : '';

  return (
    <div>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Overview
      </Typography.Title>

      <Row gutter={[16, 16]} style={{ marginBottom: 16 }}>
        <Col xs={12} md={8} xl={4}>
          <StatCard
            title="GPUs free"
            testId="stat-gpus-free"
            value={nodes.data ? gpus.free : undefined}
            suffix={nodes.data ? `/ ${gpus.total}` : undefined}
            note={gpuNote || undefined}
            loading={nodes.loading}
          />
        </Col>
        <Col xs={12} md={8} xl={4}>
          <StatCard
            title="Jobs running"
            testId="stat-running"
            value={c ? `${c.running}${plus}` : undefined}
            note={c?.scheduled ? `${c.scheduled} starting` : undefined}
            loading={counts.loading}
          />
        </Col>
        <Col xs={12} md={8} xl={4}>
          <StatCard title="Jobs pending" testId="stat-pending" value={c ? `${c.pending}${plus}` : undefined} loading={counts.loading} />
        </Col>
        <Col xs={12} md={8} xl={4}>
          <StatCard title="Succeeded today" testId="stat-succeeded" value={c ? `${c.succeeded}${plus}` : undefined} loading={counts.loading} />
        </Col>
        <Col xs={12} md={8} xl={4}>
          <StatCard title="Failed today" testId="stat-failed" value={c ? `${c.failed}${plus}` : undefined} loading={counts.loading} />
        </Col>
        <Col xs={12} md={8} xl={4}>
          <StatCard
            title="Oldest wait"
            testId="stat-oldest-wait"
            value={queueTotals ? waitText(queueTotals.pending, queueTotals.wait) : undefined}
            note={queueTotals ? `${queueTotals.pending} pending, ${queueTotals.running} running in all queues` : undefined}
            loading={queues.loading}
          />
        </Col>
      </Row>
      {counts.error && <Alert type="error" showIcon style={{ marginBottom: 16 }} message={`Could not count jobs: ${counts.error}`} />}
      {c?.capped && (
        <Typography.Paragraph type="secondary">
          Counted from the latest {LIST_CAP} jobs of each state; "+" means there may be more.
        </Typography.Paragraph>
      )}

      <Card title="GPUs" style={{ marginBottom: 16 }} extra={<Link to="/nodes">Nodes</Link>}>
        {nodes.error && <Alert type="error" showIcon style={{ marginBottom: 12 }} message={`Could not load nodes: ${nodes.error}`} />}
        {nodes.data ? <GpuGrid nodes={nodes.data} jobs={jobLabels} /> : !nodes.error && <Typography.Text type="secondary">Loading…</Typography.Text>}
      </Card>

      <Row gutter={[16, 16]}>
        <Col xs={24} xl={14}>
          <Card title="Your jobs" extra={<Link to={`/jobs${query({ user: me?.user })}`}>All jobs</Link>}>
            {mine.error && <Alert type="error" showIcon style={{ marginBottom: 12 }} message={`Could not load your jobs: ${mine.error}`} />}
            <Table<Job>
              size="small"
              rowKey="id"
              pagination={false}
              loading={mine.loading && !mine.data}
              dataSource={mine.data ?? []}
              scroll={{ x: true }}
              locale={{ emptyText: 'You have no jobs yet' }}
              aria-label="Your jobs"
              columns={[
                { title: 'ID', dataIndex: 'id', render: (id: number) => <Link to={`/jobs/${id}`}>{id}</Link> },
                { title: 'Name', dataIndex: 'name', render: (name: string, j) => <Link to={`/jobs/${j.id}`}>{name || `job ${j.id}`}</Link> },
                { title: 'Project', dataIndex: 'project' },
                { title: 'State', dataIndex: 'state', render: (s: string) => <StateTag state={s} /> },
                {
                  title: 'Submitted',
                  dataIndex: 'created_at',
                  render: (t: number) => (
                    <Tooltip title={formatTime(t)}>
                      <span>{fromNow(t)}</span>
                    </Tooltip>
                  ),
                },
                { title: 'Runtime', key: 'runtime', render: (_: unknown, j) => runtime(j) },
              ]}
            />
          </Card>
        </Col>
        <Col xs={24} xl={10}>
          <Card title="Queues" extra={<Link to="/queues">Queues and quotas</Link>}>
            {queues.error && <Alert type="error" showIcon style={{ marginBottom: 12 }} message={`Could not load queues: ${queues.error}`} />}
            <Table<Queue>
              size="small"
              rowKey="name"
              pagination={false}
              loading={queues.loading && !q}
              dataSource={q ?? []}
              scroll={{ x: true }}
              aria-label="Queue summary"
              columns={[
                { title: 'Queue', dataIndex: 'name' },
                { title: 'Pending', dataIndex: 'pending', align: 'right' },
                { title: 'Running', dataIndex: 'running', align: 'right' },
                {
                  title: 'Oldest wait',
                  key: 'wait',
                  align: 'right',
                  render: (_: unknown, x) => {
                    const w = oldestWait([x]);
                    return w === null ? '—' : formatDuration(w);
                  },
                },
              ]}
            />
          </Card>
        </Col>
      </Row>
    </div>
  );
}
