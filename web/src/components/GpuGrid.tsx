import { Empty, Flex, Tag, Tooltip, Typography } from 'antd';
import { Link } from 'react-router-dom';
import type { Gpu, Job, NodeInfo } from '../api/types';
import { GPU_STATES, GPU_STATE_STYLE, gpuState, type GpuStatus } from '../lib/gpuState';
import { formatTime } from '../lib/time';
import { Sparkline } from './Sparkline';

// What the grid may know about a job beyond its id (from a jobs list).
export type JobLabel = Pick<Job, 'id' | 'name' | 'user' | 'project'>;

const GIB = 2 ** 30;

function gib(bytes: number): string {
  const v = bytes / GIB;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

// "12.3 / 80 GiB", or the total alone where no monitor reports use.
export function gpuMemoryText(g: Gpu): string {
  const total = g.memory_bytes;
  const used = g.memory_used_bytes;
  if (total === undefined || total === null) return g.memory ?? '—';
  if (used === undefined || used === null) return `${gib(total)} GiB`;
  return `${gib(used)} / ${gib(total)} GiB`;
}

export function utilText(g: Gpu): string {
  return g.util_percent === null || g.util_percent === undefined ? '—' : `${Math.round(g.util_percent)}%`;
}

export function GpuLegend() {
  return (
    <Flex wrap gap={12} role="list" aria-label="GPU states" style={{ marginBottom: 12 }}>
      {GPU_STATES.map((s) => {
        const st = GPU_STATE_STYLE[s];
        return (
          <Flex key={s} role="listitem" align="center" gap={6} data-testid={`legend-${s}`}>
            <span
              aria-hidden
              style={{
                display: 'inline-block',
                width: 14,
                height: 14,
                borderRadius: 3,
                background: st.background,
                border: `2px solid ${st.color}`,
              }}
            />
            <span>{st.label}</span>
          </Flex>
        );
      })}
    </Flex>
  );
}

export function JobLinks({ ids, jobs }: { ids: number[]; jobs?: Map<number, JobLabel> }) {
  return (
    <>
      {ids.map((id, i) => {
        const j = jobs?.get(id);
        return (
          <span key={id}>
            {i > 0 && ', '}
            <Link to={`/jobs/${id}`}>
              job {id}
              {j?.name ? ` (${j.name})` : ''}
            </Link>
          </span>
        );
      })}
    </>
  );
}

function details(node: string, g: Gpu, st: GpuStatus, jobs?: Map<number, JobLabel>) {
  const rows: [string, string][] = [
    ['GPU', `${node}/${g.index} ${g.model}`],
    ['UUID', g.uuid ?? '—'],
    ['State', st.text],
  ];
  if (!g.healthy) rows.push(['Reason', g.unhealthy_reason || 'no reason given']);
  if (g.ghost_pids && g.ghost_pids.length > 0) rows.push(['Ghost pids', g.ghost_pids.join(', ')]);
  if (g.idle_since && st.state !== 'idle') rows.push(['Idle since', formatTime(g.idle_since)]);
  for (const id of st.jobs) {
    const j = jobs?.get(id);
    rows.push([`Job ${id}`, j ? `${j.name} (${j.user}, ${j.project})` : 'see its page']);
  }
  rows.push(['Utilisation', utilText(g)]);
  rows.push(['Memory', gpuMemoryText(g)]);
  return (
    <div>
      {rows.map(([k, v], i) => (
        <div key={i}>
          <strong>{k}:</strong> {v}
        </div>
      ))}
    </div>
  );
}

function GpuTile({ node, gpu, jobs }: { node: string; gpu: Gpu; jobs?: Map<number, JobLabel> }) {
  const st = gpuState(gpu);
  const style = GPU_STATE_STYLE[st.state];
  const values = (gpu.history ?? []).map((p) => p[1]);
  return (
    <Tooltip title={details(node, gpu, st, jobs)} trigger={['hover', 'focus']}>
      <div
        tabIndex={0}
        role="group"
        aria-label={`GPU ${node}/${gpu.index}, ${gpu.model}: ${st.text}`}
        data-testid="gpu-tile"
        data-node={node}
        data-index={gpu.index}
        data-gpu-state={st.state}
        style={{
          background: style.background,
          border: `1px solid ${style.color}`,
          borderLeft: `5px solid ${style.color}`,
          borderRadius: 6,
          padding: '8px 10px',
          minWidth: 0,
          outlineOffset: 2,
        }}
      >
        <Flex justify="space-between" align="center" gap={4} wrap>
          <Typography.Text strong>
            {node}/{gpu.index}
          </Typography.Text>
          <Tag color={style.tag} style={{ marginInlineEnd: 0 }}>
            {style.label}
          </Tag>
        </Flex>
        <Typography.Text type="secondary" ellipsis style={{ display: 'block' }}>
          {gpu.model}
        </Typography.Text>
        <div style={{ fontSize: 12 }}>Memory {gpuMemoryText(gpu)}</div>
        <div style={{ fontSize: 12, minHeight: 20 }}>
          {st.jobs.length > 0 ? (
            <JobLinks ids={st.jobs} jobs={jobs} />
          ) : st.state === 'free' ? (
            <Typography.Text type="secondary">no job</Typography.Text>
          ) : (
            <Typography.Text type="secondary">{st.state === 'unhealthy' || st.state === 'ghost' ? st.text : 'in use'}</Typography.Text>
          )}
        </div>
        {values.length === 0 && (gpu.util_percent === null || gpu.util_percent === undefined) ? (
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            utilisation not reported
          </Typography.Text>
        ) : (
          <Flex align="center" gap={6}>
            <Sparkline values={values} width={110} height={24} color={style.color} label={`utilisation of GPU ${node}/${gpu.index}`} />
            <span style={{ fontVariantNumeric: 'tabular-nums', fontSize: 12 }}>{utilText(gpu)}</span>
          </Flex>
        )}
      </div>
    </Tooltip>
  );
}

export interface GpuGridProps {
  nodes: NodeInfo[];
  jobs?: Map<number, JobLabel>;
}

// Every GPU of every node as a tile coloured by its state, grouped by node.
export function GpuGrid({ nodes, jobs }: GpuGridProps) {
  const withGpus = nodes.filter((n) => n.gpus.length > 0);
  return (
    <div data-testid="gpu-grid">
      <GpuLegend />
      {withGpus.length === 0 && <Empty description="No GPUs reported by any node" />}
      {withGpus.map((n) => {
        const free = n.gpus.filter((g) => gpuState(g).state === 'free').length;
        return (
          <section key={n.name} aria-label={`GPUs of ${n.name}`} style={{ marginBottom: 12 }}>
            <Typography.Text strong>{n.name}</Typography.Text>{' '}
            <Typography.Text type="secondary">
              {free} of {n.gpus.length} GPUs free
            </Typography.Text>
            <div
              style={{
                display: 'grid',
                gridTemplateColumns: 'repeat(auto-fill, minmax(190px, 1fr))',
                gap: 8,
                marginTop: 6,
              }}
            >
              {n.gpus.map((g) => (
                <GpuTile key={g.index} node={n.name} gpu={g} jobs={jobs} />
              ))}
            </div>
          </section>
        );
      })}
    </div>
  );
}

export default GpuGrid;
