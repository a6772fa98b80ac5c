import { useEffect, useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import { Alert, Button, Card, Col, Descriptions, Empty, Flex, Result, Row, Skeleton, Space, Table, Tag, Typography } from 'antd';
import type { DescriptionsProps, TableProps } from 'antd';
import { api, ApiError } from '../api/client';
import { usePoll } from '../api/usePoll';
import type { Job, JobSpec, NodeInfo } from '../api/types';
import { StateTag } from '../components/StateTag';
import { TimeChart } from '../components/TimeChart';
import { JobActions } from '../components/JobActions';
import { EventsTimeline } from '../components/EventsTimeline';
import { LogViewer } from '../components/LogViewer';
import { MetricCharts } from '../components/MetricCharts';
import { formatDuration, formatTime, fromNow } from '../lib/time';
import { gpuUtilSeries, isActive, isTerminal, jobQueue, jobTiming, placementRows, type PlacementRow } from '../lib/jobs';

function Code({ children }: { children: ReactNode }) {
  return (
    <pre style={{ margin: 0, whiteSpace: 'pre-wrap', wordBreak: 'break-word', fontSize: 12 }}>
      <code>{children}</code>
    </pre>
  );
}

// The small tables inside the job's cards: every row at once.
function CardTable<T extends object>(props: TableProps<T>) {
  return <Table<T> size="small" pagination={false} scroll={{ x: true }} {...props} />;
}

// Shell words quoted only where needed, so the command reads as typed.
function shellJoin(args: string[]): string {
  return args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function text(v: unknown): string {
  if (v === undefined || v === null || v === '') return '—';
  return String(v);
}

function KeyValueTags({ map }: { map?: Record<string, string> }) {
  const entries = Object.entries(map ?? {});
  if (entries.length === 0) return <>—</>;
  return (
    <Space wrap size={4}>
      {entries.map(([k, v]) => (
        <Tag key={k}>
          {k}={v}
        </Tag>
      ))}
    </Space>
  );
}

function SpecDescriptions({ spec }: { spec: JobSpec }) {
  const r = spec.resources ?? {};
  const items: DescriptionsProps['items'] = [];
  if (spec.command?.length) items.push({ key: 'command', label: 'Command', span: 'filled', children: <Code>{shellJoin(spec.command)}</Code> });
  if (spec.script) items.push({ key: 'script', label: 'Script', span: 'filled', children: <Code>{spec.script}</Code> });
  items.push(
    { key: 'image', label: 'Image', children: spec.image ? <Typography.Text code>{spec.image}</Typography.Text> : 'none (runs on the host)' },
    { key: 'gpus', label: 'GPUs per replica', children: text(r.gpus ?? 0) },
    { key: 'gpu_type', label: 'GPU types', children: r.gpu_type?.length ? r.gpu_type.join(', ') : 'any' },
    { key: 'cpus', label: 'CPUs', children: text(r.cpus) },
    { key: 'memory', label: 'Memory', children: text(r.memory) },
    { key: 'replicas', label: 'Replicas', children: text(spec.replicas ?? 1) },
    { key: 'priority', label: 'Priority', children: text(spec.priority) },
    { key: 'max_runtime', label: 'Max runtime', children: text(spec.max_runtime) },
  );
  if (spec.min_runtime) items.push({ key: 'min_runtime', label: 'Min runtime', children: text(spec.min_runtime) });
  items.push({ key: 'grace', label: 'Grace period', children: text(spec.grace_period) });
  if (spec.retries) {
    items.push({
      key: 'retries',
      label: 'Retries',
      children: spec.retries.limit ? `up to ${spec.retries.limit}, backoff ${text(spec.retries.backoff)}` : 'none',
    });
  }
  if (spec.workdir) items.push({ key: 'workdir', label: 'Working directory', children: <Typography.Text code>{spec.workdir}</Typography.Text> });
  if (spec.node_selector && Object.keys(spec.node_selector).length) {
    items.push({ key: 'node_selector', label: 'Node selector', children: <KeyValueTags map={spec.node_selector} /> });
  }
  if (spec.same_label) items.push({ key: 'same_label', label: 'Replicas share label', children: spec.same_label });
  if (spec.notify?.webhook) {
    items.push({
      key: 'notify',
      label: 'Notify',
      children: `${spec.notify.webhook}${spec.notify.on?.length ? ` on ${spec.notify.on.join(', ')}` : ''}`,
    });
  }
  const env = Object.entries(spec.env ?? {}).map(([name, value]) => ({ name, value }));
  items.push({
    key: 'env',
    label: 'Environment',
    span: 'filled',
    children: env.length ? (
      <CardTable
        rowKey="name"
        dataSource={env}
        columns={[
          { title: 'Variable', dataIndex: 'name', key: 'name', render: (v: string) => <Typography.Text code>{v}</Typography.Text> },
          { title: 'Value', dataIndex: 'value', key: 'value', render: (v: string) => <Typography.Text style={{ wordBreak: 'break-all' }}>{v}</Typography.Text> },
        ]}
      />
    ) : (
      'none'
    ),
  });
  return <Descriptions bordered size="small" column={{ xs: 1, md: 2, xxl: 3 }} items={items} />;
}

function Placement({ rows }: { rows: PlacementRow[] }) {
  return (
    <CardTable<PlacementRow>
      rowKey="key"
      dataSource={rows}
      columns={[
        { title: 'Replica', dataIndex: 'replica', key: 'replica', width: 90 },
        { title: 'Node', dataIndex: 'node', key: 'node', render: (n: string) => <Link to={`/nodes?node=${encodeURIComponent(n)}`}>{n}</Link> },
        {
          title: 'GPUs',
          key: 'gpus',
          render: (_, r) =>
            r.gpus.length === 0 ? (
              'none'
            ) : (
              <Space wrap size={4}>
                {r.gpus.map((g, i) => (
                  <Tag key={g}>
                    GPU {g}
                    {r.shares[i] !== '1' ? ` (${r.shares[i]} of it)` : ''}
                  </Tag>
                ))}
              </Space>
            ),
        },
      ]}
    />
  );
}

function GpuUtilisation({ job }: { job: Job }) {
  const nodes = usePoll(
    async (signal) => (await api<{ nodes: NodeInfo[] }>('/api/v1/nodes', { signal })).nodes,
    5000,
    [job.id],
  );
  const data = gpuUtilSeries(nodes.data ?? [], job.attempt);
  if (data.series.length === 0) return null;
  return (
    <Card title="GPU utilisation" size="small" data-testid="job-gpu-util">
      <TimeChart x={data.x} series={data.series} yLabel="%" height={200} yRange={[0, 100]} />
    </Card>
  );
}

function WhyItWaits({ job }: { job: Job }) {
  const w = job.waiting;
  const message = w?.message || job.reason || 'The scheduler has not looked at this job yet.';
  const items: DescriptionsProps['items'] = [
    { key: 'why', label: 'Reason', span: 'filled', children: message },
    { key: 'queue', label: 'Queue', children: w?.queue || jobQueue(job) || '—' },
    { key: 'pos', label: 'Position', children: w?.position ? `#${w.position} in the queue` : 'unknown' },
    {
      key: 'eta',
      label: 'Estimated start',
      children: w?.estimated_start ? `${formatTime(w.estimated_start)} (${fromNow(w.estimated_start)})` : 'unknown',
    },
  ];
  if (job.not_before && job.not_before > Date.now()) {
    items.push({ key: 'nb', label: 'Not before', children: `${formatTime(job.not_before)} (retry backoff)` });
  }
  return (
    <Card title="Why it waits" size="small" data-testid="why-it-waits">
      <Descriptions size="small" column={{ xs: 1, md: 2 }} items={items} />
    </Card>
  );
}

function Header({ job, now }: { job: Job; now: number }) {
  const t = jobTiming(job, now);
  const runtime = t.kind === 'none' ? '—' : formatDuration(t.ms);
  const items: DescriptionsProps['items'] = [
    { key: 'state', label: 'State', children: <StateTag state={job.state} /> },
    { key: 'project', label: 'Project', children: job.project },
    { key: 'user', label: 'User', children: job.user },
    { key: 'queue', label: 'Queue', children: jobQueue(job) || '—' },
    { key: 'created', label: 'Created', children: formatTime(job.created_at) },
    { key: 'started', label: 'Started', children: formatTime(job.started_at) },
    { key: 'finished', label: 'Finished', children: formatTime(job.finished_at) },
    { key: 'runtime', label: t.kind === 'waiting' ? 'Waiting' : 'Runtime', children: runtime },
    { key: 'attempts', label: 'Attempts', children: String(job.attempts) },
    {
      key: 'exit',
      label: 'Exit code',
      children: job.exit_code === null || job.exit_code === undefined ? '—' : String(job.exit_code),
    },
  ];
  if (job.preemptions) items.push({ key: 'preempt', label: 'Preemptions', children: String(job.preemptions) });
  if (job.preempted_by) {
    items.push({ key: 'by', label: 'Preempted by', children: <Link to={`/jobs/${job.preempted_by}`}>job {job.preempted_by}</Link> });
  }
  if (job.reason && job.state !== 'pending') {
    items.push({
      key: 'reason',
      label: 'Reason',
      span: 'filled',
      children: <Typography.Text type={job.state === 'failed' ? 'danger' : undefined}>{job.reason}</Typography.Text>,
    });
  }
  return <Descriptions size="small" column={{ xs: 1, sm: 2, lg: 3, xxl: 5 }} items={items} data-testid="job-header" />;
}

export default function JobPage() {
  const { id: idParam } = useParams();
  const navigate = useNavigate();
  const id = Number(idParam);
  const valid = Number.isInteger(id) && id > 0;
  const [now, setNow] = useState(() => Date.now());

  const job = usePoll(
    async (signal) => {
      const j = await api<Job>(`/api/v1/jobs/${id}`, { signal });
      setNow(Date.now());
      return j;
    },
    valid ? 3000 : 0,
    [id],
  );
  const [notFound, setNotFound] = useState(false);
  useEffect(() => setNotFound(false), [id]);
  useEffect(() => {
    if (job.error && !job.data) {
      // usePoll keeps only the message; ask once more to learn the status.
      api<Job>(`/api/v1/jobs/${id}`).catch((e) => {
        if (e instanceof ApiError && e.status === 404) setNotFound(true);
      });
    }
  }, [job.error, job.data, id]);

  const j = job.data && job.data.id === id ? job.data : undefined;
  useEffect(() => {
    document.title = j ? `${j.name} #${j.id} · Trainyard` : `Job ${idParam} · Trainyard`;
  }, [j?.name, j?.id, idParam]);

  if (!valid || notFound) {
    return (
      <Result
        status="404"
        title="No such job"
        subTitle={`Job ${idParam} does not exist, or it belongs to a project you cannot see.`}
        extra={
          <Button type="primary" onClick={() => navigate('/jobs')}>
            Back to jobs
          </Button>
        }
      />
    );
  }
  if (!j) {
    if (job.error) return <Alert type="error" showIcon title={`Could not load job ${id}: ${job.error}`} />;
    return <Skeleton active />;
  }

  const rows = placementRows(j.attempt);
  const active = isActive(j.state);

  return (
    <Flex vertical gap={16}>
      <Flex justify="space-between" align="flex-start" wrap gap={12}>
        <div>
          <Typography.Text type="secondary">
            <Link to="/jobs">Jobs</Link> / {j.id}
          </Typography.Text>
          <Typography.Title level={2} style={{ margin: 0 }}>
            {j.name} <Typography.Text type="secondary">#{j.id}</Typography.Text> <StateTag state={j.state} />
          </Typography.Title>
        </div>
        <JobActions job={j} onChanged={job.refresh} />
      </Flex>
      {job.error && <Alert type="warning" showIcon title={`Could not refresh: ${job.error}`} />}
      <Card size="small">
        <Header job={j} now={now} />
      </Card>
      {j.state === 'pending' && <WhyItWaits job={j} />}
      <Row gutter={[16, 16]}>
        <Col xs={24} xl={14} xxl={16}>
          <Flex vertical gap={16}>
            <Card title={j.attempt ? `Placement (attempt ${j.attempt.number})` : 'Placement'} size="small">
              {rows.length ? (
                <Placement rows={rows} />
              ) : (
                <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="Not placed yet." />
              )}
            </Card>
            <Card title="Spec" size="small">
              <SpecDescriptions spec={j.spec} />
            </Card>
          </Flex>
        </Col>
        <Col xs={24} xl={10} xxl={8}>
          <Card title="Events" size="small" styles={{ body: { maxHeight: 520, overflow: 'auto' } }}>
            <EventsTimeline jobId={j.id} active={!isTerminal(j.state)} />
          </Card>
        </Col>
      </Row>
      <Card title="Logs" size="small">
        <LogViewer jobId={j.id} attempts={j.attempts} replicas={j.spec.replicas ?? 1} jobOver={isTerminal(j.state)} />
      </Card>
      <Card size="small">
        <MetricCharts jobId={j.id} active={active} />
      </Card>
      {(j.state === 'running' || j.state === 'scheduled') && <GpuUtilisation job={j} />}
    </Flex>
  );
}
