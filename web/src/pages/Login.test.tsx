import { afterEach, describe, expect, it } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { MemoryRouter, Route, Routes } from 'react-router-dom';
import { AuthProvider } from '../auth/AuthContext';
import { reply, stubApi } from '../test/api';
import LoginPage, { safeNext } from './Login';

const WAIT = { timeout: 10_000 };

// whoami answers 401 until a login succeeded.
function stubLogin(loginReply: () => Response) {
  let signedIn = false;
  const logins: unknown[] = [];
  stubApi({
    'POST /api/v1/login': ({ body }) => {
      logins.push(body);
      const r = loginReply();
      signedIn = r.ok;
      return r;
    },
    'GET /api/v1/whoami': () =>
      signedIn
        ? { user: 'eve', admin: false, projects: [] }
        : reply({ error: { code: 'unauthenticated', message: 'no credentials' } }, 401),
  });
  return logins;
}

function renderLogin(next = '/jobs') {
  return render(
    <MemoryRouter initialEntries={[`/login?next=${encodeURIComponent(next)}`]}>
      <AuthProvider>
        <Routes>
          <Route path="/login" element={<LoginPage />} />
          <Route path="/jobs" element={<div>jobs page</div>} />
          <Route path="/" element={<div>overview page</div>} />
        </Routes>
      </AuthProvider>
    </MemoryRouter>,
  );
}

afterEach(() => sessionStorage.clear());

describe('LoginPage', { timeout: 60_000 }, () => {
  it('shows the API message for wrong credentials', async () => {
    const logins = stubLogin(() => reply({ error: { code: 'unauthenticated', message: 'wrong user name or password' } }, 401));
    renderLogin();
    expect(await screen.findByText('Sign in to Trainyard', {}, WAIT)).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('User'), { target: { value: 'eve' } });
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'nope' } });
    fireEvent.click(screen.getByRole('button', { name: 'Log in' }));
    expect(await screen.findByRole('alert', {}, WAIT)).toHaveTextContent('Wrong user name or password.');
    expect(logins).toEqual([{ user: 'eve', password: 'nope' }]);
  });

  it('says how long to wait when rate limited', async () => {
    stubLogin(() => reply({ error: { code: 'resource_exhausted', message: 'too many sign-in attempts from this address' } }, 429, { 'Retry-After': '120' }));
    renderLogin();
    await screen.findByText('Sign in to Trainyard', {}, WAIT);
    fireEvent.change(screen.getByLabelText('User'), { target: { value: 'eve' } });
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'x' } });
    fireEvent.click(screen.getByRole('button', { name: 'Log in' }));
    expect(await screen.findByRole('alert', {}, WAIT)).toHaveTextContent(
      'Too many sign-in attempts from this address; try again in 2 minutes.',
    );
  });

  it('signs in with a token and goes to the page asked for', async () => {
    const logins = stubLogin(() => reply({ user: 'eve', admin: false, expires_at: 0, csrf_token: 'c' }));
    const user = userEvent.setup({ pointerEventsCheck: 0, delay: null });
    renderLogin('/jobs');
    await screen.findByText('Sign in to Trainyard', {}, WAIT);
    await user.click(screen.getByRole('tab', { name: 'Token' }));
    fireEvent.change(await screen.findByLabelText('Token', {}, WAIT), { target: { value: 'ty_abc' } });
    fireEvent.click(screen.getByRole('button', { name: 'Log in' }));
    expect(await screen.findByText('jobs page', {}, WAIT)).toBeInTheDocument();
    expect(logins).toEqual([{ token: 'ty_abc' }]);
  });
});

describe('safeNext', () => {
  it('keeps paths of this site only', () => {
    expect(safeNext('/jobs/7?x=1')).toBe('/jobs/7?x=1');
    expect(safeNext('//evil.example')).toBe('/');
    expect(safeNext('https://evil.example')).toBe('/');
    expect(safeNext('/\\evil.example')).toBe('/');
    expect(safeNext(null)).toBe('/');
  });
});
