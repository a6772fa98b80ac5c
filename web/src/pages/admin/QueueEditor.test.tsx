import { describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { WhoAmI } from '../../api/types';
import { stubApi } from '../../test/api';
import { ADMIN, renderPage } from '../../test/render';
import AdminPage from './Admin';

const renderAdmin = (path: string, me: WhoAmI = ADMIN) => renderPage(<AdminPage />, { me, path, route: '/admin/:section?' });

// GET /api/v1/queues as the server writes it: amounts as text, null for none.
const nlp = {
  name: 'nlp',
  cohort: 'research',
  weight: 2,
  projects: ['nlp'],
  resources: [
    { name: 'gpu', nominal: '8', borrowing_limit: '4', lending_limit: null, used: '2' },
    { name: 'memory', nominal: '512Gi', borrowing_limit: null, lending_limit: null, used: '0' },
  ],
  usage_gpu_hours: 0,
  pending: 0,
  running: 1,
};

describe('queue editor', () => {
  it('saves the edited queue with the PUT body and shows the note', async () => {
    const calls = stubApi({
      'GET /api/v1/queues': { queues: [nlp] },
      'GET /api/v1/projects': { projects: [{ name: 'nlp', created_at: 1 }] },
      'GET /api/v1/nodes': { nodes: [] },
      'PUT /api/v1/queues/nlp': ({ body }) => ({
        name: 'nlp',
        ...(body as object),
        note: 'queue nlp uses 12 GPUs, above the new nominal 6',
      }),
    });
    renderAdmin('/admin/queues');
    fireEvent.click(await screen.findByText('Edit', { selector: 'button span' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByLabelText('Name')).toHaveValue('nlp');
    expect(within(dialog).getByLabelText('Cohort')).toHaveValue('research');

    const [gpuNominal] = within(dialog).getAllByLabelText('Nominal');
    expect(gpuNominal).toHaveValue('8');
    fireEvent.change(gpuNominal, { target: { value: '6' } });
    const [, memoryBorrowing] = within(dialog).getAllByLabelText('Borrowing limit');
    fireEvent.change(memoryBorrowing, { target: { value: '64Gi' } });
    // Drop the gpu row's borrowing limit: empty means no limit.
    fireEvent.change(within(dialog).getAllByLabelText('Borrowing limit')[0], { target: { value: '' } });
    fireEvent.click(within(dialog).getByText('Add quota'));
    const rows = within(dialog).getAllByLabelText('Resource');
    fireEvent.change(rows[2], { target: { value: 'gpu:A100' } });
    fireEvent.change(within(dialog).getAllByLabelText('Nominal')[2], { target: { value: '2' } });
    fireEvent.change(within(dialog).getAllByLabelText('Lending limit')[2], { target: { value: '1' } });
    fireEvent.click(within(dialog).getByText('Save'));

    await waitFor(() => expect(calls.some((c) => c.method === 'PUT')).toBe(true));
    const put = calls.find((c) => c.method === 'PUT')!;
    expect(put.path).toBe('/api/v1/queues/nlp');
    expect(put.body).toEqual({
      project: 'nlp',
      cohort: 'research',
      weight: 2,
      quota: {
        gpu: { nominal: 6 },
        memory: { nominal: '512Gi', borrowing_limit: '64Gi' },
        'gpu:A100': { nominal: 2, lending_limit: 1 },
      },
    });
    expect(await screen.findByText('queue nlp uses 12 GPUs, above the new nominal 6')).toBeInTheDocument();
  }, 60000);

  it('shows a server error at the quota row it names', async () => {
    stubApi({
      'GET /api/v1/queues': { queues: [nlp] },
      'GET /api/v1/projects': { projects: [] },
      'GET /api/v1/nodes': { nodes: [] },
      'PUT /api/v1/queues/nlp': new Response(
        JSON.stringify({
          error: {
            code: 'invalid_argument',
            field: 'quota.memory.nominal',
            message: 'must not be negative',
          },
        }),
        { status: 400 },
      ),
    });
    renderAdmin('/admin/queues');
    fireEvent.click(await screen.findByText('Edit', { selector: 'button span' }));
    const dialog = await screen.findByRole('dialog');
    fireEvent.click(within(dialog).getByText('Save'));
    const message = await within(dialog).findByText('must not be negative');
    // The message sits under the memory row's Nominal field.
    expect(message.closest('[data-testid="quota-row-1"]')).not.toBeNull();
  }, 60000);
});
