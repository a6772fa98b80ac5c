import { describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { Job } from '../api/types';
import { stubApi } from '../test/api';
import { renderPage } from '../test/render';
import JobsPage from './Jobs';

vi.mock('../components/TimeChart', () => ({ TimeChart: () => null }));

const job = (id: number, extra: Partial<Job> = {}): Job => ({
  id,
  name: `train-${id}`,
  project: 'nlp',
  user: 'eve',
  state: 'running',
  spec: { queue: 'nlp', resources: { gpus: 2 }, replicas: 1 },
  created_at: Date.now() - 60_000,
  started_at: Date.now() - 30_000,
  attempts: 1,
  ...extra,
});

function stubJobs(jobs: Job[]) {
  return stubApi({
    'GET /api/v1/jobs': { jobs, next_before: null },
    'GET /api/v1/projects': { projects: [{ name: 'nlp' }, { name: 'vision' }] },
    'GET /api/v1/queues': { queues: [{ name: 'nlp' }] },
  });
}

const renderAt = (path: string) => renderPage(<JobsPage />, { path, route: '/jobs' });

describe('Jobs page', () => {
  it('shows the jobs with links and the pending reason', async () => {
    stubJobs([
      job(12),
      job(11, {
        state: 'pending',
        started_at: null,
        waiting: { queue: 'nlp', position: 3, message: 'Waiting: needs 2 GPUs, 1 free', estimated_start: null },
      }),
    ]);
    renderAt('/jobs');
    expect(await screen.findByRole('link', { name: 'train-12' })).toHaveAttribute('href', '/jobs/12');
    const row = screen.getByRole('link', { name: 'train-11' }).closest('tr')!;
    expect(within(row).getByText('pending')).toBeInTheDocument();
    expect(within(row).getByText('Waiting: needs 2 GPUs, 1 free')).toBeInTheDocument();
    expect(within(row).getByText(/#3/)).toBeInTheDocument();
    expect(screen.getByRole('heading', { name: 'Jobs' })).toBeInTheDocument();
  }, 60000);

  it('sends the filters from the URL, one request per state, and explains an empty result', async () => {
    const calls = stubJobs([]);
    renderAt('/jobs?state=pending,running&project=nlp&user=bob&limit=25');
    expect(await screen.findByText('No jobs match these filters.')).toBeInTheDocument();
    const lists = calls.map((c) => c.url).filter((u) => u.startsWith('/api/v1/jobs?'));
    expect(lists).toContain('/api/v1/jobs?state=pending&project=nlp&user=bob&limit=25');
    expect(lists).toContain('/api/v1/jobs?state=running&project=nlp&user=bob&limit=25');
  });

  it('asks again with the user typed in the filter', async () => {
    const calls = stubJobs([job(1)]);
    renderAt('/jobs');
    await screen.findByRole('link', { name: 'train-1' });
    await userEvent.type(screen.getByRole('textbox', { name: 'User' }), 'zoe');
    await waitFor(() => expect(calls.some((c) => c.url === '/api/v1/jobs?user=zoe&limit=50')).toBe(true));
  });
});
