import { useEffect, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import { Alert, Button, Empty, Flex, Form, Input, Select, Space, Table, Tooltip, Typography } from 'antd';
import type { TableColumnsType } from 'antd';
import { LeftOutlined, ReloadOutlined, RightOutlined } from '@ant-design/icons';
import { api } from '../api/client';
import { usePoll } from '../api/usePoll';
import type { Job, JobList, Queue } from '../api/types';
import { ALL_STATES } from '../api/types';
import { useAuth } from '../auth/AuthContext';
import { StateTag } from '../components/StateTag';
import { formatDuration, formatTime, fromNow } from '../lib/time';
import {
  filterByQueue,
  filtersFromSearch,
  filtersToSearch,
  gpuCount,
  gpuLabel,
  hasFilters,
  jobListUrls,
  jobQueue,
  jobTiming,
  mergeJobPages,
  PAGE_SIZES,
  type JobFilters,
} from '../lib/jobs';

const STATE_OPTIONS = [...ALL_STATES, 'preempted'].map((s) => ({ value: s, label: s }));

function TimingCell({ job, now }: { job: Job; now: number }) {
  const t = jobTiming(job, now);
  if (t.kind === 'none') return <>—</>;
  const text = formatDuration(t.ms);
  if (t.kind === 'waiting') return <Typography.Text type="secondary">waiting {text}</Typography.Text>;
  return <>{text}</>;
}

function ReasonCell({ job }: { job: Job }) {
  if (job.state === 'pending' && (job.waiting || job.reason)) {
    const msg = job.waiting?.message || job.reason || '';
    const pos = job.waiting?.position;
    return (
      <span>
        {pos ? <Typography.Text strong>#{pos} </Typography.Text> : null}
        <Typography.Text type="secondary">{msg}</Typography.Text>
      </span>
    );
  }
  if (!job.reason) return null;
  return <Typography.Text type={job.state === 'failed' ? 'danger' : 'secondary'}>{job.reason}</Typography.Text>;
}

// A filter on one of `choices` by name; empty: any.
function OneOfFilter({
  label,
  minWidth,
  choices,
  value,
  onChange,
}: {
  label: string;
  minWidth: number;
  choices: string[] | undefined;
  value: string;
  onChange: (value: string) => void;
}) {
  const id = `jobs-filter-${label.toLowerCase()}`;
  return (
    <Form.Item label={label} htmlFor={id}>
      <Select
        id={id}
        allowClear
        showSearch
        placeholder={`any ${label.toLowerCase()}`}
        style={{ minWidth }}
        options={(choices ?? []).map((c) => ({ value: c, label: c }))}
        value={value || undefined}
        onChange={(v?: string) => onChange(v ?? '')}
      />
    </Form.Item>
  );
}

export default function JobsPage() {
  const { me } = useAuth();
  const [search, setSearch] = useSearchParams();
  const filters = useMemo(() => filtersFromSearch(search), [search]);
  // Cursors of the newer pages visited, so "Newer" can step back; after a
  // reload there is none and "Newer" goes to the newest page.
  const [newer, setNewer] = useState<number[]>([]);
  const [userText, setUserText] = useState(filters.user);
  const [now, setNow] = useState(() => Date.now());

  useEffect(() => {
    document.title = 'Jobs · Trainyard';
  }, []);

  const update = (change: Partial<JobFilters>, keepPage = false) => {
    const next: JobFilters = { ...filters, ...change };
    if (!keepPage) {
      next.before = null;
      setNewer([]);
    }
    setSearch(filtersToSearch(next));
  };

  // The user box updates the URL after typing stops, not on every key.
  useEffect(() => {
    if (userText === filters.user) return;
    const t = setTimeout(() => update({ user: userText.trim() }), 400);
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [userText]);
  useEffect(() => setUserText(filters.user), [filters.user]);

  const urls = jobListUrls(filters);
  const listKey = urls.join('|');
  const list = usePoll(
    async (signal) => {
      const pages = await Promise.all(urls.map((u) => api<JobList>(u, { signal })));
      setNow(Date.now());
      return { key: listKey, page: mergeJobPages(pages, filters.limit) };
    },
    3000,
    [listKey],
  );
  // The last answer may be for the previous filters until the new one comes.
  const current = list.data?.key === listKey ? list.data.page : undefined;

  const projects = usePoll(
    async (signal) => {
      try {
        const r = await api<{ projects: { name: string }[] }>('/api/v1/projects', { signal });
        return r.projects.map((p) => p.name);
      } catch {
        return me?.projects.map((p) => p.project) ?? [];
      }
    },
    0,
    [me?.user],
  );
  const queues = usePoll(
    async (signal) => (await api<{ queues: Queue[] }>('/api/v1/queues', { signal })).queues.map((q) => q.name),
    0,
    [],
  );

  const jobs = filterByQueue(current?.jobs ?? [], filters.queue);
  const nextBefore = current?.next_before ?? null;

  const columns: TableColumnsType<Job> = [
    {
      title: 'ID',
      dataIndex: 'id',
      key: 'id',
      width: 80,
      sorter: (a, b) => a.id - b.id,
      render: (id: number) => <Link to={`/jobs/${id}`}>{id}</Link>,
    },
    {
      title: 'Name',
      dataIndex: 'name',
      key: 'name',
      minWidth: 140,
      sorter: (a, b) => a.name.localeCompare(b.name),
      render: (name: string, job) => <Link to={`/jobs/${job.id}`}>{name}</Link>,
    },
    { title: 'Project', dataIndex: 'project', key: 'project', sorter: (a, b) => a.project.localeCompare(b.project) },
    { title: 'User', dataIndex: 'user', key: 'user', sorter: (a, b) => a.user.localeCompare(b.user) },
    {
      title: 'State',
      dataIndex: 'state',
      key: 'state',
      sorter: (a, b) => a.state.localeCompare(b.state),
      render: (state: string) => <StateTag state={state} />,
    },
    {
      title: 'Queue',
      key: 'queue',
      sorter: (a, b) => jobQueue(a).localeCompare(jobQueue(b)),
      render: (_, job) => jobQueue(job) || '—',
    },
    {
      title: 'GPUs',
      key: 'gpus',
      align: 'right',
      sorter: (a, b) => gpuCount(a) - gpuCount(b),
      render: (_, job) => gpuLabel(job),
    },
    {
      title: 'Created',
      dataIndex: 'created_at',
      key: 'created',
      sorter: (a, b) => a.created_at - b.created_at,
      render: (ms: number) => (
        <Tooltip title={fromNow(ms, now)}>
          <span style={{ whiteSpace: 'nowrap' }}>{formatTime(ms)}</span>
        </Tooltip>
      ),
    },
    {
      title: 'Runtime / wait',
      key: 'timing',
      minWidth: 120,
      sorter: (a, b) => (jobTiming(a, now).ms ?? -1) - (jobTiming(b, now).ms ?? -1),
      render: (_, job) => <TimingCell job={job} now={now} />,
    },
    { title: 'Reason', key: 'reason', minWidth: 280, render: (_, job) => <ReasonCell job={job} /> },
  ];

  const older = () => {
    if (nextBefore === null) return;
    setNewer((s) => [...s, filters.before ?? 0]);
    update({ before: nextBefore }, true);
  };
  const newerPage = () => {
    const stack = [...newer];
    const prev = stack.pop();
    setNewer(stack);
    update({ before: prev ? prev : null }, true);
  };

  const emptyText = !current ? (
    ' '
  ) : (
    <Empty
      image={Empty.PRESENTED_IMAGE_SIMPLE}
      description={
        hasFilters(filters)
          ? 'No jobs match these filters.'
          : filters.before
            ? 'No older jobs.'
            : 'No jobs yet. Submitted jobs of your projects show up here.'
      }
    />
  );

  return (
    <div>
      <Flex justify="space-between" align="center" wrap gap={8}>
        <Typography.Title level={2} style={{ margin: 0 }}>
          Jobs
        </Typography.Title>
        <Button icon={<ReloadOutlined />} onClick={list.refresh}>
          Refresh
        </Button>
      </Flex>
      <Form layout="inline" style={{ margin: '16px 0', rowGap: 8 }} aria-label="Job filters">
        <Form.Item label="State" htmlFor="jobs-filter-state">
          <Select
            id="jobs-filter-state"
            mode="multiple"
            allowClear
            placeholder="any state"
            style={{ minWidth: 200 }}
            options={STATE_OPTIONS}
            value={filters.states}
            onChange={(v: string[]) => update({ states: v as JobFilters['states'] })}
          />
        </Form.Item>
        <OneOfFilter label="Project" minWidth={160} choices={projects.data} value={filters.project} onChange={(project) => update({ project })} />
        <Form.Item label="User" htmlFor="jobs-filter-user">
          <Input
            id="jobs-filter-user"
            allowClear
            placeholder="any user"
            style={{ width: 160 }}
            value={userText}
            onChange={(e) => setUserText(e.target.value)}
            onPressEnter={() => update({ user: userText.trim() })}
          />
        </Form.Item>
        <OneOfFilter label="Queue" minWidth={140} choices={queues.data} value={filters.queue} onChange={(queue) => update({ queue })} />
        {hasFilters(filters) && (
          <Form.Item>
            <Button
              onClick={() => {
                setUserText('');
                update({ states: [], project: '', user: '', queue: '' });
              }}
            >
              Clear filters
            </Button>
          </Form.Item>
        )}
      </Form>
      {list.error && (
        <Alert
          type="error"
          showIcon
          style={{ marginBottom: 12 }}
          title={current ? `Could not refresh the list: ${list.error}` : `Could not load jobs: ${list.error}`}
        />
      )}
      <Table<Job>
        rowKey="id"
        size="middle"
        columns={columns}
        dataSource={jobs}
        loading={!current && !list.error}
        pagination={false}
        scroll={{ x: true }}
        locale={{ emptyText }}
        data-testid="jobs-table"
      />
      <Flex justify="space-between" align="center" wrap gap={8} style={{ marginTop: 12 }}>
        <Typography.Text type="secondary">
          {jobs.length > 0 ? `${jobs.length} job${jobs.length === 1 ? '' : 's'} on this page, newest first` : ''}
        </Typography.Text>
        <Space wrap>
          <Button icon={<LeftOutlined />} disabled={!filters.before} onClick={newerPage}>
            Newer
          </Button>
          <Button disabled={nextBefore === null} onClick={older}>
            Older <RightOutlined />
          </Button>
          <label htmlFor="jobs-page-size">Page size</label>
          <Select
            id="jobs-page-size"
            style={{ width: 90 }}
            value={filters.limit}
            options={PAGE_SIZES.map((n) => ({ value: n, label: String(n) }))}
            onChange={(v: number) => update({ limit: v })}
          />
        </Space>
      </Flex>
    </div>
  );
}
