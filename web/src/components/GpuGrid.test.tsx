import { describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/react';
import { MemoryRouter } from 'react-router-dom';
import type { NodeInfo } from '../api/types';
import { GpuGrid } from './GpuGrid';

const nodes: NodeInfo[] = [
  {
    name: 'gpu-a',
    cpus: 64,
    memory_bytes: 512 * 2 ** 30,
    gpus: [
      { index: 0, model: 'A100-80GB', memory_bytes: 80 * 2 ** 30, healthy: true, job: 12, jobs: [12], used: '1',
        util_percent: 87, memory_used_bytes: 40 * 2 ** 30, history: [[1, 80], [2, 87]] },
      { index: 1, model: 'A100-80GB', memory_bytes: 80 * 2 ** 30, healthy: true, job: null, jobs: [], used: '0' },
      { index: 2, model: 'A100-80GB', healthy: false, unhealthy_reason: 'XID 79', job: null, jobs: [], used: '0' },
      { index: 3, model: 'A100-80GB', healthy: true, job: null, jobs: [], used: '1' },
    ],
  },
  {
    name: 'gpu-b',
    cpus: 32,
    memory_bytes: 256 * 2 ** 30,
    gpus: [
      { index: 0, model: 'H100-80GB', healthy: true, job: 5, jobs: [5], used: '1', idle_since: 1_700_000_000_000, util_percent: 0 },
      { index: 1, model: 'H100-80GB', healthy: true, job: null, jobs: [], used: '0', ghost_pids: [999] },
    ],
  },
];

describe('GpuGrid', () => {
  it('shows every GPU with its state, holder and utilisation', () => {
    render(
      <MemoryRouter>
        <GpuGrid nodes={nodes} jobs={new Map([[12, { id: 12, name: 'bert', user: 'eve', project: 'nlp' }]])} />
      </MemoryRouter>,
    );
    for (const label of ['free', 'held', 'idle while held', 'unhealthy', 'ghost process']) {
      expect(within(screen.getByRole('list', { name: 'GPU states' })).getByText(label)).toBeInTheDocument();
    }
    const tiles = screen.getAllByTestId('gpu-tile');
    expect(tiles.map((t) => `${t.dataset.node}/${t.dataset.index}=${t.dataset.gpuState}`)).toEqual([
      'gpu-a/0=held',
      'gpu-a/1=free',
      'gpu-a/2=unhealthy',
      'gpu-a/3=held',
      'gpu-b/0=idle',
      'gpu-b/1=ghost',
    ]);

    const held = within(tiles[0]);
    expect(held.getByRole('link', { name: 'job 12 (bert)' })).toHaveAttribute('href', '/jobs/12');
    expect(held.getByText('87%')).toBeInTheDocument();
    expect(held.getByText('Memory 40 / 80 GiB')).toBeInTheDocument();
    expect(tiles[0]).toHaveAttribute('tabindex', '0');

    expect(within(tiles[2]).getByText('unhealthy: XID 79')).toBeInTheDocument();
    // Held by a project the caller cannot see: no link, just "in use".
    expect(within(tiles[3]).queryByRole('link')).toBeNull();
    expect(within(tiles[3]).getByText('in use')).toBeInTheDocument();
    expect(within(tiles[4]).getByRole('link', { name: 'job 5' })).toHaveAttribute('href', '/jobs/5');
    expect(screen.getByText('1 of 4 GPUs free')).toBeInTheDocument();
  });
});
