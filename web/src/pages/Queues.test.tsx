import { describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import { stubApi } from '../test/api';
import { renderPage } from '../test/render';
import QueuesPage from './Queues';

vi.mock('../components/TimeChart', () => ({
  TimeChart: ({ series }: { series: { label: string }[] }) => <div data-testid="time-chart">{series.map((s) => s.label).join(',')}</div>,
}));

// As the server writes it: amounts as text, null for no limit.
const queues = [
  {
    name: 'nlp',
    cohort: 'research',
    weight: 2,
    projects: ['nlp'],
    usage_gpu_hours: 10,
    pending: 3,
    running: 2,
    oldest_pending_at: Date.now() - 3_600_000,
    resources: [
      { name: 'memory', nominal: '512Gi', borrowing_limit: null, lending_limit: null, used: '640Gi' },
      { name: 'gpu', nominal: '8', borrowing_limit: '4', lending_limit: '2', used: '10' },
    ],
  },
  {
    name: 'vision',
    cohort: 'research',
    weight: 1,
    projects: ['vision'],
    usage_gpu_hours: 2,
    pending: 0,
    running: 1,
    resources: [{ name: 'gpu', nominal: '8', borrowing_limit: null, lending_limit: null, used: '6', borrowed: '0', lent: '2' }],
  },
];

describe('QueuesPage', () => {
  it('shows quotas with borrowed and lent, waits and fair-share standing', async () => {
    stubApi({ 'GET /api/v1/queues': { queues } });
    renderPage(<QueuesPage />);
    expect(screen.getByRole('heading', { name: 'Queues and quotas' })).toBeInTheDocument();
    const table = screen.getByRole('table', { name: 'Queues' });
    await waitFor(() => expect(within(table).getByText('vision', { selector: 'strong' })).toBeInTheDocument());

    const rows = within(table).getAllByRole('row').filter((r) => r.dataset.queue);
    expect(rows.map((r) => `${r.dataset.queue}/${r.dataset.resource}`)).toEqual(['nlp/gpu', 'nlp/memory', 'vision/gpu']);
    const cells = (r: HTMLElement) => within(r).getAllByRole('cell').map((c) => c.textContent);
    // GPU first; borrowed = used above nominal when the server does not say.
    expect(cells(rows[0])).toEqual(
      expect.arrayContaining(['nlp', 'research', '2', 'gpu', '8', '10', '2', '4', '3', '1h 00m', '2 of 2 in research5.00 GPU-h / weight']),
    );
    expect(cells(rows[1])).toEqual(['memory', '512 GiB', '640 GiB', '128 GiB', '—', 'no limit', 'no limit']);
    // The server's lent figure.
    expect(cells(rows[2])).toEqual(expect.arrayContaining(['vision', '1 of 2 in research2.00 GPU-h / weight']));
    expect(cells(rows[2]).slice(4, 11)).toEqual(['gpu', '8', '6', '0', '2', 'no limit', 'no limit']);

    expect(screen.getByTestId('usage-note')).toHaveTextContent('the history covers only the time this page has been open');
  });
});
