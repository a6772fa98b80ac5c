import { describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { Job, WhoAmI } from '../api/types';
import { reply, stubApi } from '../test/api';
import { renderPage } from '../test/render';
import JobPage from './JobPage';

vi.mock('../components/TimeChart', () => ({ TimeChart: () => <div data-testid="time-chart" /> }));

const running: Job = {
  id: 5,
  name: 'bert-large',
  project: 'nlp',
  user: 'eve',
  state: 'running',
  spec: {
    name: 'bert-large',
    project: 'nlp',
    queue: 'nlp',
    command: ['python3', 'train.py', '--lr', '3e-4'],
    resources: { gpus: 2 },
    replicas: 1,
    env: { WANDB_MODE: 'offline' },
  },
  created_at: Date.now() - 120_000,
  started_at: Date.now() - 60_000,
  attempts: 1,
  attempt: { job: 5, number: 1, state: 'running', replicas: [{ node: 'gpu-a', gpus: [0, 1] }] },
};

function stubJobApi(cancelStatus = 200) {
  return stubApi({
    'POST /api/v1/jobs/5/cancel': () =>
      cancelStatus === 200
        ? running
        : reply({ error: { code: 'failed_precondition', message: 'job 5 already succeeded; there is nothing to cancel' } }, cancelStatus),
    'GET /api/v1/jobs/5': running,
    'GET /api/v1/jobs/5/events': ({ query }) => ({
      events:
        query.get('after') === '0'
          ? [{ seq: 1, job: 5, time: Date.now() - 60_000, level: 'normal', reason: 'Started', message: 'Started pid 42' }]
          : [],
    }),
    // Cursor reads: the text once, then only what is new (nothing).
    'GET /api/v1/jobs/5/logs': ({ query }) =>
      reply(query.get('cursor') === 'start' ? 'step 1 loss 0.9\nstep 2 loss 0.8\n' : '', 200, {
        'Content-Type': 'text/plain',
        'X-Log-Cursor': 'c1',
        'X-Log-Done': 'false',
      }),
    'GET /api/v1/jobs/5/metrics': { job: 5, metrics: [] },
    'GET /api/v1/nodes': { nodes: [] },
  });
}

const renderAs = (me: WhoAmI) => renderPage(<JobPage />, { me, path: '/jobs/5', route: '/jobs/:id' });

describe('Job page', () => {
  it('shows a viewer the job, its spec, events and log, but no actions', async () => {
    stubJobApi();
    renderAs({ user: 'vic', admin: false, projects: [{ project: 'nlp', role: 'viewer' }] });
    expect(await screen.findByRole('heading', { name: /bert-large/ })).toBeInTheDocument();
    expect(screen.getByText('python3 train.py --lr 3e-4')).toBeInTheDocument();
    expect(screen.getByText('WANDB_MODE')).toBeInTheDocument();
    expect(await screen.findByText('Started pid 42', {}, { timeout: 15_000 })).toBeInTheDocument();
    expect(await screen.findByText(/step 2 loss 0.8/, {}, { timeout: 15_000 })).toBeInTheDocument();
    expect(screen.getByTestId('log-view').tagName).toBe('PRE');
    expect(await screen.findByText(/no training metrics yet/, {}, { timeout: 15_000 })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Cancel job/ })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Rerun/ })).not.toBeInTheDocument();
  }, 60000);

  it('lets the owning engineer cancel, and shows the API message when refused', async () => {
    const calls = stubJobApi(409);
    renderAs({ user: 'eve', admin: false, projects: [{ project: 'nlp', role: 'engineer' }] });
    await userEvent.click(await screen.findByRole('button', { name: /Cancel job/ }));
    await userEvent.click(await screen.findByRole('button', { name: 'Yes, cancel' }));
    await waitFor(() => expect(calls).toContainEqual(expect.objectContaining({ url: '/api/v1/jobs/5/cancel', method: 'POST' })));
    expect(await screen.findByText('job 5 already succeeded; there is nothing to cancel')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: /Clone and edit/ })).toBeInTheDocument();
  });

  it('hides cancel from an engineer on someone else’s job', async () => {
    stubJobApi();
    renderAs({ user: 'bob', admin: false, projects: [{ project: 'nlp', role: 'engineer' }] });
    expect(await screen.findByRole('button', { name: /Rerun/ })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Cancel job/ })).not.toBeInTheDocument();
  });

  it('reads the log on from its cursor and highlights search matches', async () => {
    const calls = stubJobApi();
    renderAs({ user: 'vic', admin: false, projects: [{ project: 'nlp', role: 'viewer' }] });
    await screen.findByText(/step 2 loss 0.8/, {}, { timeout: 15_000 });
    await userEvent.type(screen.getByLabelText('Search the log'), 'loss');
    expect(await screen.findByTestId('log-match-count')).toHaveTextContent('2 matches in 2 lines');
    expect(screen.getByTestId('log-view').querySelectorAll('mark')).toHaveLength(2);
    expect(calls.map((c) => c.url)).toContain('/api/v1/jobs/5/logs?attempt=1&replica=0&cursor=start&tail=2000');
    await waitFor(() => expect(calls.map((c) => c.url)).toContain('/api/v1/jobs/5/logs?attempt=1&replica=0&cursor=c1'), {
      timeout: 15_000,
    });
    expect(screen.getByRole('link', { name: /Download/ })).toHaveAttribute('href', '/api/v1/jobs/5/logs?attempt=1&replica=0');
  });
});
