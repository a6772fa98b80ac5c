import { describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { WhoAmI } from '../../api/types';
import { stubApi } from '../../test/api';
import { ADMIN, renderPage } from '../../test/render';
import AdminPage from './Admin';

const renderAdmin = (path: string, me: WhoAmI = ADMIN) => renderPage(<AdminPage />, { me, path, route: '/admin/:section?' });

const bob = { name: 'bob', admin: false, disabled: false, has_password: true, created_at: 1, locked_until: 0 };
const root = { ...bob, name: 'root', admin: true };

describe('Admin page', () => {
  it('tells a non-admin that administration needs a global admin', async () => {
    const calls = stubApi({});
    renderAdmin('/admin/users', { user: 'eve', admin: false, projects: [{ project: 'nlp', role: 'admin' }] });
    expect(screen.getByText('Administration needs a global admin')).toBeInTheDocument();
    expect(screen.queryByRole('tab')).not.toBeInTheDocument();
    expect(calls).toHaveLength(0);
  });

  it('creates a user from the Users tab and refreshes the table', async () => {
    const users = [root];
    const calls = stubApi({
      'GET /api/v1/users': () => ({ users }),
      'POST /api/v1/users': ({ body }) => {
        const b = body as { name: string; admin: boolean };
        const created = { ...bob, name: b.name, admin: b.admin };
        users.push(created);
        return new Response(JSON.stringify(created), { status: 201 });
      },
    });
    renderAdmin('/admin/users');
    expect(await screen.findByText('root', { selector: 'td' })).toBeInTheDocument();
    expect(screen.getByRole('tab', { name: 'Users', selected: true })).toBeInTheDocument();

    fireEvent.click(screen.getByText('New user'));
    const dialog = await screen.findByRole('dialog');
    const name = within(dialog).getByLabelText('Name');
    // The client refuses a name the server would refuse, before sending.
    fireEvent.change(name, { target: { value: 'Carol' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await within(dialog).findByText(/lower-case letters/)).toBeInTheDocument();
    expect(calls.filter((c) => c.method === 'POST')).toHaveLength(0);

    fireEvent.change(name, { target: { value: 'carol' } });
    fireEvent.change(within(dialog).getByLabelText('Password'), { target: { value: 's3cret-pass' } });
    fireEvent.click(within(dialog).getByRole('switch', { name: 'Admin' }));
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create' }));

    await waitFor(() => expect(calls.some((c) => c.method === 'POST')).toBe(true));
    const post = calls.find((c) => c.method === 'POST')!;
    expect(post.path).toBe('/api/v1/users');
    expect(post.body).toEqual({ name: 'carol', admin: true, password: 's3cret-pass' });
    // The table asks again after the change and lists the new user.
    expect(await screen.findByText('carol', { selector: 'td' })).toBeInTheDocument();
  }, 60000);

  it('shows the API error at the field it names', async () => {
    stubApi({
      'GET /api/v1/users': { users: [root] },
      'POST /api/v1/users': new Response(
        JSON.stringify({ error: { code: 'already_exists', message: 'user bob already exists' } }),
        { status: 409 },
      ),
    });
    renderAdmin('/admin/users');
    fireEvent.click(await screen.findByText('New user'));
    const dialog = await screen.findByRole('dialog');
    fireEvent.change(within(dialog).getByLabelText('Name'), { target: { value: 'bob' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await within(dialog).findByText('user bob already exists')).toBeInTheDocument();
  });

  it('changes a member role inline', async () => {
    const calls = stubApi({
      'GET /api/v1/projects': { projects: [{ name: 'nlp', created_at: 1, role: null, webhook_url: '' }] },
      'GET /api/v1/users': { users: [root, bob] },
      'GET /api/v1/projects/nlp/members': { members: [{ user: 'bob', role: 'viewer' }] },
      'PUT /api/v1/projects/nlp/members/bob': ({ body }) => ({ user: 'bob', project: 'nlp', ...(body as object) }),
    });
    renderAdmin('/admin/members?project=nlp');
    const role = await screen.findByRole('combobox', { name: 'Role of bob' });
    fireEvent.mouseDown(role);
    const options = await screen.findAllByTitle('engineer');
    fireEvent.click(options[options.length - 1]);
    await waitFor(() => expect(calls.some((c) => c.method === 'PUT')).toBe(true));
    const put = calls.find((c) => c.method === 'PUT')!;
    expect(put.path).toBe('/api/v1/projects/nlp/members/bob');
    expect(put.body).toEqual({ role: 'engineer' });
  });
});
