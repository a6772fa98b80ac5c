import { useEffect, useMemo, useState, type HTMLAttributes } from 'react';
import { Alert, Card, Flex, Table, Tag, Tooltip, Typography } from 'antd';
import type { ColumnsType } from 'antd/es/table';
import { api } from '../api/client';
import type { Queue, QueueResource } from '../api/types';
import { usePoll } from '../api/usePoll';
import { TimeChart } from '../components/TimeChart';
import {
  EMPTY_HISTORY,
  amountOf,
  appendUsage,
  borrowedOf,
  fairShareRank,
  formatAmount,
  isGpu,
  lentOf,
  oldestWait,
  sortResources,
  type Amount,
  type FairShare,
  type UsageHistory,
} from '../lib/queues';
import { formatDuration, formatTime } from '../lib/time';

const POLL_MS = 5000;

// One table row per queue resource; the queue's own columns span its rows.
interface Row {
  key: string;
  queue: Queue;
  resource: QueueResource | null;
  first: boolean;
  span: number;
}

export function queueRows(queues: Queue[]): Row[] {
  const rows: Row[] = [];
  for (const q of queues) {
    const resources = sortResources(q.resources ?? []);
    if (resources.length === 0) {
      rows.push({ key: q.name, queue: q, resource: null, first: true, span: 1 });
      continue;
    }
    resources.forEach((r, i) =>
      rows.push({ key: `${q.name}/${r.name}`, queue: q, resource: r, first: i === 0, span: i === 0 ? resources.length : 0 }),
    );
  }
  return rows;
}

function amount(r: QueueResource | null, field: 'nominal' | 'used' | 'borrowing_limit' | 'lending_limit'): string {
  if (!r) return '—';
  const v = amountOf(r.name, r[field] as Amount);
  if (v === null) return field === 'nominal' || field.endsWith('limit') ? 'no limit' : '—';
  return formatAmount(r.name, v);
}

// Small decayed usage stays readable: 0.00005 rather than 0.00.
export function formatScore(s: number): string {
  if (!Number.isFinite(s)) return '∞';
  if (s === 0) return '0';
  if (s >= 100) return s.toFixed(0);
  if (s >= 1) return s.toFixed(2);
  return String(Number(s.toPrecision(2)));
}

function FairShareCell({ fs }: { fs: FairShare | undefined }) {
  if (!fs) return <>—</>;
  const score = formatScore(fs.score);
  return (
    <Tooltip title="Decayed GPU-hours per unit of weight; the queue with the lowest value in its cohort goes first.">
      <div tabIndex={0}>
        <div>{fs.cohort ? `${fs.rank} of ${fs.of} in ${fs.cohort}` : 'no cohort'}</div>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {score} GPU-h / weight
        </Typography.Text>
      </div>
    </Tooltip>
  );
}

export default function QueuesPage() {
  useEffect(() => {
    document.title = 'Queues and quotas · Trainyard';
  }, []);
  const queues = usePoll((signal) => api<{ queues: Queue[] }>('/api/v1/queues', { signal }).then((r) => r.queues), POLL_MS, []);

  const [history, setHistory] = useState<UsageHistory>(EMPTY_HISTORY);
  useEffect(() => {
    const data = queues.data;
    if (data) setHistory((h) => appendUsage(h, data, Date.now()));
  }, [queues.data]);

  const list = useMemo(() => queues.data ?? [], [queues.data]);
  const ranks = useMemo(() => fairShareRank(list), [list]);
  const rows = useMemo(() => queueRows(list), [list]);
  const chartSeries = useMemo(
    () => Object.entries(history.byQueue).map(([label, values]) => ({ label, values })),
    [history],
  );

  // Columns of the queue itself, shown once across its resource rows.
  const spanned = (col: ColumnsType<Row>[number]): ColumnsType<Row>[number] => ({
    ...col,
    onCell: (row: Row) => ({ rowSpan: row.span }),
  });

  const columns: ColumnsType<Row> = [
    spanned({ title: 'Queue', key: 'name', fixed: 'left', render: (_, r) => <Typography.Text strong>{r.queue.name}</Typography.Text> }),
    spanned({ title: 'Cohort', key: 'cohort', render: (_, r) => r.queue.cohort || <Typography.Text type="secondary">none</Typography.Text> }),
    spanned({ title: 'Weight', key: 'weight', align: 'right', render: (_, r) => r.queue.weight }),
    spanned({
      title: 'Projects',
      key: 'projects',
      render: (_, r) =>
        r.queue.projects?.length ? (
          <Flex gap={4} wrap>
            {r.queue.projects.map((p) => (
              <Tag key={p}>{p}</Tag>
            ))}
          </Flex>
        ) : (
          <Typography.Text type="secondary">projects without a queue</Typography.Text>
        ),
    }),
    {
      title: 'Resource',
      key: 'resource',
      render: (_, r) => (r.resource ? <Tag color={isGpu(r.resource.name) ? 'blue' : 'default'}>{r.resource.name}</Tag> : '—'),
    },
    { title: 'Nominal', key: 'nominal', align: 'right', render: (_, r) => amount(r.resource, 'nominal') },
    {
      title: 'Used',
      key: 'used',
      align: 'right',
      render: (_, r) => {
        const text = amount(r.resource, 'used');
        const over = r.resource && borrowedOf(r.resource) > 0;
        return over ? (
          <Tooltip title="Above nominal: the difference is borrowed from the cohort">
            <Typography.Text type="warning" tabIndex={0}>
              {text}
            </Typography.Text>
          </Tooltip>
        ) : (
          text
        );
      },
    },
    { title: 'Borrowed', key: 'borrowed', align: 'right', render: (_, r) => (r.resource ? formatAmount(r.resource.name, borrowedOf(r.resource)) : '—') },
    {
      title: 'Lent',
      key: 'lent',
      align: 'right',
      render: (_, r) => {
        if (!r.resource) return '—';
        // Only the server's cohort accounting knows what is lent.
        if (r.resource.lent === undefined || r.resource.lent === null) return <Typography.Text type="secondary">—</Typography.Text>;
        return formatAmount(r.resource.name, lentOf(r.resource));
      },
    },
    { title: 'Borrowing limit', key: 'borrowing_limit', align: 'right', render: (_, r) => amount(r.resource, 'borrowing_limit') },
    { title: 'Lending limit', key: 'lending_limit', align: 'right', render: (_, r) => amount(r.resource, 'lending_limit') },
    spanned({ title: 'Pending', key: 'pending', align: 'right', render: (_, r) => r.queue.pending }),
    spanned({ title: 'Running', key: 'running', align: 'right', render: (_, r) => r.queue.running }),
    spanned({
      title: 'Oldest wait',
      key: 'wait',
      align: 'right',
      render: (_, r) => {
        const w = oldestWait([r.queue]);
        if (w === null) return '—';
        return (
          <Tooltip title={`pending since ${formatTime(r.queue.oldest_pending_at)}`}>
            <span tabIndex={0}>{formatDuration(w)}</span>
          </Tooltip>
        );
      },
    }),
    spanned({ title: 'Fair share', key: 'fair', render: (_, r) => <FairShareCell fs={ranks.get(r.queue.name)} /> }),
  ];

  return (
    <div>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Queues and quotas
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        Nominal is a queue&apos;s own quota. Use above nominal is borrowed from idle quota of queues in the same cohort, up
        to the borrowing limit; the lending limit caps what others may borrow from it. GPU amounts are GPUs, memory is in
        GiB.
      </Typography.Paragraph>
      {queues.error && <Alert type="error" showIcon style={{ marginBottom: 16 }} message={`Could not load queues: ${queues.error}`} />}
      <Card style={{ marginBottom: 16 }} styles={{ body: { padding: 0 } }}>
        <Table<Row>
          size="small"
          bordered
          rowKey="key"
          pagination={false}
          loading={queues.loading && !queues.data}
          dataSource={rows}
          columns={columns}
          scroll={{ x: true }}
          aria-label="Queues"
          locale={{ emptyText: 'No queues' }}
          onRow={(r) => ({ 'data-queue': r.queue.name, 'data-resource': r.resource?.name ?? '' }) as HTMLAttributes<HTMLElement>}
        />
      </Card>
      <Card title="GPUs used per queue">
        <Typography.Paragraph type="secondary" data-testid="usage-note">
          Sampled every {POLL_MS / 1000} s while this page is open: the history covers only the time this page has been
          open, since the server keeps no history of queue use.
        </Typography.Paragraph>
        {history.x.length < 2 ? (
          <Typography.Text type="secondary">Collecting samples…</Typography.Text>
        ) : (
          <TimeChart x={history.x} series={chartSeries} height={260} yLabel="GPUs" yRange={[0, null]} />
        )}
      </Card>
    </div>
  );
}
