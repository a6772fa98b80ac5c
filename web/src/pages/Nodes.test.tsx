import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import { stubApi } from '../test/api';
import { renderPage } from '../test/render';
import NodesPage from './Nodes';

const G = 2 ** 30;
// As the server writes it: CPU amounts as text.
const nodes = [
  {
    name: 'gpu-a',
    labels: { zone: 'a' },
    cpus: '64',
    used_cpus: '8.5',
    memory_bytes: 512 * G,
    used_memory_bytes: 128 * G,
    gpus: [
      { index: 0, model: 'H100', memory_bytes: 80 * G, healthy: true, job: 12, jobs: [12], used: '1', util_percent: 91, memory_used_bytes: 60 * G },
      { index: 1, model: 'H100', memory_bytes: 80 * G, healthy: false, unhealthy_reason: 'XID 79', job: null, jobs: [], used: '0' },
      { index: 2, model: 'H100', memory_bytes: 80 * G, healthy: true, job: null, jobs: [], used: '1' },
    ],
  },
];

describe('NodesPage', () => {
  it('shows each node with its use, GPUs and the jobs running there', async () => {
    stubApi({
      'GET /api/v1/nodes': { nodes },
      'GET /api/v1/jobs': { jobs: [{ id: 12, name: 'bert', user: 'eve', project: 'nlp', state: 'running' }], next_before: null },
    });
    renderPage(<NodesPage />);
    expect(screen.getByRole('heading', { name: 'Nodes' })).toBeInTheDocument();
    const card = await screen.findByTestId('node-card');
    const c = within(card);
    expect(c.getByText('gpu-a')).toBeInTheDocument();
    expect(c.getByText('zone=a')).toBeInTheDocument();
    expect(c.getByText('8.5 / 64 CPUs')).toBeInTheDocument();
    expect(c.getByText('128 / 512 GiB')).toBeInTheDocument();
    expect(c.getByText('1 unhealthy')).toBeInTheDocument();
    await waitFor(() => expect(c.getAllByRole('link', { name: 'job 12 (bert)' })[0]).toHaveAttribute('href', '/jobs/12'));

    const rows = within(c.getByRole('table', { name: 'GPUs of gpu-a' })).getAllByRole('row').slice(1);
    expect(rows[0]).toHaveTextContent('91%');
    expect(rows[0]).toHaveTextContent('60 / 80 GiB');
    expect(rows[1]).toHaveTextContent('XID 79');
    // Held by a project the caller cannot see.
    expect(rows[2]).toHaveTextContent('in use');
  });
});
