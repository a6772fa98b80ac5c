import { describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useParams } from 'react-router-dom';
import type { NodeInfo, Queue, WhoAmI } from '../api/types';
import { reply, stubApi, type Call } from '../test/api';
import { ENGINEER, renderPage } from '../test/render';
import SubmitPage from './Submit';

const queues: Queue[] = [
  {
    name: 'nlp',
    projects: ['nlp'],
    weight: 1,
    pending: 0,
    running: 1,
    resources: [{ name: 'gpu', nominal: 8, borrowing_limit: null, lending_limit: null, used: 2 }],
  },
];
const nodes: NodeInfo[] = [
  {
    name: 'gpu-a',
    cpus: 64,
    memory_bytes: 1,
    gpus: [0, 1, 2, 3].map((index) => ({ index, model: 'A100-80GB', healthy: true, used: index === 0 ? '1' : '0' })),
  },
];

// Submissions answer from `answers` in turn; returns what was submitted.
function stubSubmit(answers: Response[]) {
  const sent: Call[] = [];
  stubApi({
    'POST /api/v1/jobs': (call) => {
      sent.push(call);
      return answers.shift() ?? reply({ error: { code: 'internal', message: 'no answer' } }, 500);
    },
    'GET /api/v1/projects': { projects: [{ name: 'nlp' }, { name: 'vision' }] },
    'GET /api/v1/queues': { queues },
    'GET /api/v1/nodes': { nodes },
  });
  return sent;
}

// The machine running the tests may be busy; antd renders slowly in jsdom.
const WAIT = { timeout: 10_000 };

function JobStub() {
  return <div>job page {useParams().id}</div>;
}

const renderSubmit = (me: WhoAmI = ENGINEER) =>
  renderPage(<SubmitPage />, { me, path: '/submit', route: '/submit', others: { '/jobs/:id': <JobStub /> } });

// One change event per field: typing key by key into antd inputs is slow in
// jsdom and adds nothing here.
function type(field: string | HTMLElement, value: string) {
  const el = typeof field === 'string' ? screen.getByLabelText(field) : field;
  fireEvent.change(el, { target: { value } });
}

function formItem(label: string): HTMLElement {
  return screen.getByLabelText(label).closest('.ant-form-item') as HTMLElement;
}

describe('SubmitPage', { timeout: 60_000 }, () => {
  it('shows the API 422 under GPUs, and resends with the same idempotency key', async () => {
    const infeasible = () =>
      reply(
        { error: { code: 'infeasible', field: 'resources.gpus', message: 'needs 9 GPUs per replica; the largest node has 4' } },
        422,
      );
    const sent = stubSubmit([infeasible(), infeasible()]);
    const user = userEvent.setup({ pointerEventsCheck: 0, delay: null });
    renderSubmit();

    expect(await screen.findByText(/Project nlp has 6 of 8 GPUs free/, {}, WAIT)).toBeInTheDocument();
    type('Name', 'bert');
    type(screen.getByRole('textbox', { name: 'Command' }), `python3 train.py --note 'two words'`);
    expect(within(screen.getByTestId('argv-preview')).getByText('two words')).toBeInTheDocument();
    await user.type(screen.getByLabelText('GPUs'), '9');
    expect(await screen.findByText(/it will wait until enough are free/, {}, WAIT)).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Submit' }));
    await waitFor(
      () => expect(within(formItem('GPUs')).getByText('needs 9 GPUs per replica; the largest node has 4')).toBeInTheDocument(),
      WAIT,
    );
    expect(formItem('GPUs').querySelector('.ant-form-item-explain-error')).not.toBeNull();
    expect(sent[0].body).toEqual({
      name: 'bert',
      project: 'nlp',
      command: ['python3', 'train.py', '--note', 'two words'],
      resources: { gpus: 9 },
    });
    expect(sent[0].headers['Content-Type']).toBe('application/json');
    expect(sent[0].headers['Idempotency-Key']).toMatch(/^[0-9a-f-]{32,36}$/);

    await user.click(screen.getByRole('button', { name: 'Submit' }));
    await waitFor(() => expect(sent).toHaveLength(2), WAIT);
    expect(sent[1].headers['Idempotency-Key']).toBe(sent[0].headers['Idempotency-Key']);
  });

  it('edits the spec as YAML, keeps text with errors, and submits it as YAML', async () => {
    const sent = stubSubmit([reply({ id: 7, name: 'bert' }, 201)]);
    const user = userEvent.setup({ pointerEventsCheck: 0, delay: null });
    renderSubmit();
    await screen.findByText(/Project nlp has/, {}, WAIT);
    type('Name', 'bert');
    type(screen.getByRole('textbox', { name: 'Command' }), 'python3 train.py');

    await user.click(screen.getByRole('tab', { name: 'YAML' }));
    const editor = (await screen.findByLabelText('Job spec YAML')) as HTMLTextAreaElement;
    expect(editor.value).toBe('name: bert\nproject: nlp\ncommand: [python3, train.py]\n');

    const broken = 'name: bert\ncommand: [python3, train.py\nresources: {gpus: 2}\n';
    fireEvent.change(editor, { target: { value: broken } });
    await user.click(screen.getByRole('tab', { name: 'Form' }));
    expect(await screen.findByTestId('yaml-errors', {}, WAIT)).toHaveTextContent(/Line 3/);
    expect((screen.getByLabelText('Job spec YAML') as HTMLTextAreaElement).value).toBe(broken);

    const fixed = 'name: bert\nproject: nlp\ncommand: [python3, train.py]\nresources: {gpus: 2}\n';
    fireEvent.change(screen.getByLabelText('Job spec YAML'), { target: { value: fixed } });
    await user.click(screen.getByRole('button', { name: 'Submit' }));
    expect(await screen.findByText('job page 7', {}, WAIT)).toBeInTheDocument();
    expect(sent[0].body).toBe(fixed);
    expect(sent[0].headers['Content-Type']).toBe('application/yaml');
  });

  it('tells a viewer there is nowhere to submit', async () => {
    stubSubmit([]);
    renderSubmit({ user: 'vic', admin: false, projects: [{ project: 'nlp', role: 'viewer' }] });
    expect(await screen.findByText('You have no project where you may submit jobs', {}, WAIT)).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Submit' })).toBeNull();
  });
});
