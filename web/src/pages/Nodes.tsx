import { useEffect, useMemo } from 'react';
import { Alert, Card, Col, Descriptions, Empty, Flex, Progress, Row, Table, Tag, Typography } from 'antd';
import { Link } from 'react-router-dom';
import { api, query } from '../api/client';
import type { Gpu, JobList, NodeInfo } from '../api/types';
import { usePoll } from '../api/usePoll';
import { JobLinks, gpuMemoryText, utilText, type JobLabel } from '../components/GpuGrid';
import { Sparkline } from '../components/Sparkline';
import { GPU_STATE_STYLE, gpuJobs, gpuState, gpuUsed } from '../lib/gpuState';
import { parseUnits } from '../lib/queues';
import { formatTime } from '../lib/time';

const POLL_MS = 5000;
const GIB = 2 ** 30;

function gib(bytes: number): string {
  const v = bytes / GIB;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

function percent(used: number, total: number): number {
  return total > 0 ? Math.min(100, Math.round((used / total) * 100)) : 0;
}

// A node's jobs: every job holding one of its GPUs. CPU-only jobs are not
// reported per node by the API.
export function nodeJobs(n: NodeInfo): number[] {
  return [...new Set(n.gpus.flatMap(gpuJobs))].sort((a, b) => a - b);
}

function Usage({ label, used, total, text }: { label: string; used: number; total: number; text: string }) {
  return (
    <div style={{ minWidth: 180, flex: 1 }}>
      <Typography.Text type="secondary">{label}</Typography.Text>
      <Progress percent={percent(used, total)} size="small" aria-label={`${label} used`} />
      <div style={{ fontSize: 12 }}>{text}</div>
    </div>
  );
}

function NodeCard({ node, jobs }: { node: NodeInfo; jobs: Map<number, JobLabel> }) {
  const cpus = parseUnits(node.cpus) ?? 0;
  const usedCpus = parseUnits(node.used_cpus ?? 0) ?? 0;
  const usedMem = node.used_memory_bytes ?? 0;
  const states = node.gpus.map((g) => gpuState(g));
  const free = states.filter((s) => s.state === 'free').length;
  const unhealthy = states.filter((s) => s.state === 'unhealthy').length;
  const held = nodeJobs(node);
  const labels = Object.entries(node.labels ?? {});
  return (
    <Card
      title={node.name}
      data-testid="node-card"
      data-node={node.name}
      extra={
        <Flex gap={4} wrap>
          <Tag color={free > 0 ? 'success' : 'default'}>
            {free} of {node.gpus.length} GPUs free
          </Tag>
          {unhealthy > 0 && <Tag color="error">{unhealthy} unhealthy</Tag>}
        </Flex>
      }
      style={{ height: '100%' }}
    >
      <Descriptions
        size="small"
        column={1}
        items={[
          {
            key: 'labels',
            label: 'Labels',
            children:
              labels.length === 0 ? (
                <Typography.Text type="secondary">none</Typography.Text>
              ) : (
                <Flex gap={4} wrap>
                  {labels.map(([k, v]) => (
                    <Tag key={k}>
                      {k}={v}
                    </Tag>
                  ))}
                </Flex>
              ),
          },
          {
            key: 'jobs',
            label: 'Jobs running here',
            children: held.length === 0 ? <Typography.Text type="secondary">none on its GPUs</Typography.Text> : <JobLinks ids={held} jobs={jobs} />,
          },
        ]}
      />
      <Flex gap={24} wrap style={{ margin: '12px 0' }}>
        <Usage label="CPUs" used={usedCpus} total={cpus} text={`${Math.round(usedCpus * 1000) / 1000} / ${cpus} CPUs`} />
        <Usage label="Memory" used={usedMem} total={node.memory_bytes} text={`${gib(usedMem)} / ${gib(node.memory_bytes)} GiB`} />
      </Flex>
      <Table<Gpu>
        size="small"
        rowKey="index"
        pagination={false}
        dataSource={node.gpus}
        scroll={{ x: true }}
        aria-label={`GPUs of ${node.name}`}
        locale={{ emptyText: 'No GPUs' }}
        columns={[
          { title: 'GPU', dataIndex: 'index' },
          { title: 'Model', dataIndex: 'model' },
          {
            title: 'Health',
            key: 'health',
            render: (_: unknown, g) =>
              g.healthy ? (
                <Tag color="success">healthy</Tag>
              ) : (
                <span>
                  <Tag color="error">unhealthy</Tag>
                  <Typography.Text type="danger">{g.unhealthy_reason || 'no reason given'}</Typography.Text>
                </span>
              ),
          },
          {
            title: 'State',
            key: 'state',
            render: (_: unknown, g) => {
              const s = gpuState(g);
              return (
                <span data-gpu-state={s.state}>
                  <Tag color={GPU_STATE_STYLE[s.state].tag}>{GPU_STATE_STYLE[s.state].label}</Tag>
                  {s.state === 'idle' && (
                    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                      since {formatTime(g.idle_since)}
                    </Typography.Text>
                  )}
                  {s.state === 'ghost' && (
                    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                      pid {(g.ghost_pids ?? []).join(', ')}, not started by any job
                    </Typography.Text>
                  )}
                </span>
              );
            },
          },
          {
            title: 'Utilisation',
            key: 'util',
            render: (_: unknown, g) => (
              <Flex align="center" gap={6}>
                <Sparkline
                  values={(g.history ?? []).map((p) => p[1])}
                  width={100}
                  height={22}
                  label={`utilisation of GPU ${node.name}/${g.index}`}
                />
                <span style={{ fontVariantNumeric: 'tabular-nums' }}>{utilText(g)}</span>
              </Flex>
            ),
          },
          { title: 'Memory', key: 'memory', render: (_: unknown, g) => <span style={{ whiteSpace: 'nowrap' }}>{gpuMemoryText(g)}</span> },
          {
            title: 'Jobs',
            key: 'jobs',
            render: (_: unknown, g) => {
              const ids = gpuJobs(g);
              if (ids.length > 0) return <JobLinks ids={ids} jobs={jobs} />;
              // Held by a project the caller cannot see.
              return gpuUsed(g) > 0 ? 'in use' : '—';
            },
          },
        ]}
      />
    </Card>
  );
}

export default function NodesPage() {
  useEffect(() => {
    document.title = 'Nodes · Trainyard';
  }, []);
  const nodes = usePoll((signal) => api<{ nodes: NodeInfo[] }>('/api/v1/nodes', { signal }).then((r) => r.nodes), POLL_MS, []);
  // Job names for the links; the nodes answer carries only ids.
  const running = usePoll(
    (signal) => api<JobList>(`/api/v1/jobs${query({ state: 'running', limit: 500 })}`, { signal }).then((r) => r.jobs),
    POLL_MS,
    [],
  );
  const jobs = useMemo(() => new Map<number, JobLabel>((running.data ?? []).map((j) => [j.id, j])), [running.data]);
  const list = nodes.data ?? [];
  const gpuCount = list.reduce((s, n) => s + n.gpus.length, 0);
  const free = list.reduce((s, n) => s + n.gpus.filter((g) => gpuState(g).state === 'free').length, 0);

  return (
    <div>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Nodes
      </Typography.Title>
      {nodes.data && (
        <Typography.Paragraph type="secondary">
          {list.length} node{list.length === 1 ? '' : 's'}, {gpuCount} GPUs, {free} free. See also the{' '}
          <Link to="/">GPU overview</Link>.
        </Typography.Paragraph>
      )}
      {nodes.error && <Alert type="error" showIcon style={{ marginBottom: 16 }} message={`Could not load nodes: ${nodes.error}`} />}
      {nodes.loading && !nodes.data && !nodes.error && <Card loading />}
      {nodes.data && list.length === 0 && <Empty description="No nodes have registered" />}
      <Row gutter={[16, 16]}>
        {list.map((n) => (
          <Col key={n.name} xs={24} xxl={12}>
            <NodeCard node={n} jobs={jobs} />
          </Col>
        ))}
      </Row>
    </div>
  );
}
