import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import type { Job, NodeInfo, Queue } from '../api/types';
import { notFound, stubApi } from '../test/api';
import { renderPage } from '../test/render';
import OverviewPage from './Overview';
const now = Date.now();

function job(id: number, state: Job['state'], over: Partial<Job> = {}): Job {
  return { id, name: `run-${id}`, project: 'nlp', user: 'eve', state, spec: {}, created_at: now - 60_000, attempts: 1, ...over };
}

const nodes: NodeInfo[] = [
  {
    name: 'gpu-a',
    cpus: 8,
    memory_bytes: 2 ** 36,
    gpus: [
      { index: 0, model: 'A100', healthy: true, job: 7, jobs: [7], used: '1' },
      { index: 1, model: 'A100', healthy: true, job: null, jobs: [], used: '0' },
    ],
  },
];
const queues: Queue[] = [
  { name: 'nlp', cohort: 'research', weight: 1, projects: ['nlp'], resources: [], pending: 2, running: 1 },
];

describe('OverviewPage', () => {
  it('shows GPUs, counts from the jobs list when /jobs/counts is missing, queues and your jobs', async () => {
    const calls = stubApi({
      'GET /api/v1/nodes': { nodes },
      'GET /api/v1/queues': () => ({ queues: queues.map((q) => ({ ...q, oldest_pending_at: Date.now() - 125_000 })) }),
      'GET /api/v1/jobs/counts': () => notFound(),
      'GET /api/v1/jobs': ({ query }) => {
        const state = query.get('state');
        const byState: Record<string, Job[]> = {
          running: [job(7, 'running', { started_at: now - 30_000 })],
          pending: [job(8, 'pending'), job(9, 'pending')],
          scheduled: [],
          // One finished today, one long ago: only today's counts.
          succeeded: [job(5, 'succeeded', { finished_at: now }), job(1, 'succeeded', { finished_at: 1000 })],
          failed: [job(4, 'failed', { finished_at: now })],
        };
        if (state) return { jobs: byState[state] ?? [], next_before: null };
        return { jobs: [job(9, 'pending'), job(7, 'running', { started_at: now - 30_000 })], next_before: null };
      },
    });
    renderPage(<OverviewPage />);

    expect(screen.getByRole('heading', { name: 'Overview' })).toBeInTheDocument();
    await waitFor(() => expect(within(screen.getByTestId('stat-succeeded')).getByText('1')).toBeInTheDocument());
    expect(within(screen.getByTestId('stat-failed')).getByText('1')).toBeInTheDocument();
    expect(within(screen.getByTestId('stat-pending')).getByText('2')).toBeInTheDocument();
    expect(within(screen.getByTestId('stat-running')).getByText('1')).toBeInTheDocument();
    await waitFor(() => expect(within(screen.getByTestId('stat-gpus-free')).getByText('/ 2')).toBeInTheDocument());
    await waitFor(() => expect(screen.getByTestId('stat-oldest-wait')).toHaveTextContent(/Oldest wait2m 0\ds/));

    // Your jobs: the caller's latest 10, linked to their pages.
    expect(calls.some((c) => c.path === '/api/v1/jobs' && c.search.includes('user=eve') && c.search.includes('limit=10'))).toBe(true);
    const yours = screen.getByRole('table', { name: 'Your jobs' });
    await waitFor(() => expect(within(yours).getByRole('link', { name: 'run-9' })).toHaveAttribute('href', '/jobs/9'));

    // The GPU tile links to the holding job, named from the running jobs list.
    const tiles = await screen.findAllByTestId('gpu-tile');
    expect(tiles.map((t) => t.dataset.gpuState)).toEqual(['held', 'free']);
    await waitFor(() => expect(within(tiles[0]).getByRole('link', { name: 'job 7 (run-7)' })).toBeInTheDocument());

    // counts asked for today's local midnight.
    const counts = calls.find((c) => c.path === '/api/v1/jobs/counts')!;
    const since = Number(new URLSearchParams(counts.search).get('since'));
    const midnight = new Date();
    midnight.setHours(0, 0, 0, 0);
    expect(since).toBe(midnight.getTime());
  });
});

describe('OverviewPage with /jobs/counts', () => {
  it("uses the server's counts and does not list jobs by state", async () => {
    const calls = stubApi({
      'GET /api/v1/nodes': { nodes: [] },
      'GET /api/v1/queues': { queues: [] },
      'GET /api/v1/jobs/counts': { since: 0, by_state: { pending: 4, running: 12, scheduled: 1, succeeded: 30, failed: 2 } },
      'GET /api/v1/jobs': { jobs: [], next_before: null },
    });
    renderPage(<OverviewPage />);
    await waitFor(() => expect(screen.getByTestId('stat-succeeded')).toHaveTextContent('Succeeded today30'));
    expect(screen.getByTestId('stat-running')).toHaveTextContent('Jobs running121 starting');
    expect(screen.getByTestId('stat-failed')).toHaveTextContent('Failed today2');
    expect(screen.getByTestId('stat-pending')).toHaveTextContent('Jobs pending4');
    expect(calls.filter((c) => /state=(pending|succeeded|failed)/.test(c.url))).toEqual([]);
    expect(await screen.findByText('No GPUs reported by any node')).toBeInTheDocument();
    expect(screen.getByText('You have no jobs yet')).toBeInTheDocument();
  });
});
