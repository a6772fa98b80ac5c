import type { ReactElement } from 'react';
import { render } from '@testing-library/react';
import { App as AntApp } from 'antd';
import { MemoryRouter, Route, Routes } from 'react-router-dom';
import { StaticAuthProvider } from '../auth/AuthContext';
import type { WhoAmI } from '../api/types';

export const ENGINEER: WhoAmI = { user: 'eve', admin: false, projects: [{ project: 'nlp', role: 'engineer' }] };
export const ADMIN: WhoAmI = { user: 'root', admin: true, projects: [] };

export interface PageOptions {
  me?: WhoAmI;
  // The URL the page opens at.
  path?: string;
  // The route pattern the page answers to, for pages that read its parameters.
  route?: string;
  // Other pages the page may navigate to, by route pattern.
  others?: Record<string, ReactElement>;
}

// Renders a page as the app does: signed in as `me`, at `path`.
export function renderPage(page: ReactElement, { me = ENGINEER, path = '/', route = '*', others = {} }: PageOptions = {}) {
  return render(
    <AntApp>
      <StaticAuthProvider me={me}>
        <MemoryRouter initialEntries={[path]}>
          <Routes>
            <Route path={route} element={page} />
            {Object.entries(others).map(([pattern, element]) => (
              <Route key={pattern} path={pattern} element={element} />
            ))}
          </Routes>
        </MemoryRouter>
      </StaticAuthProvider>
    </AntApp>,
  );
}
