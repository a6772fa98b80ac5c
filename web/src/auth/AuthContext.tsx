import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { api, setCsrfToken, setUnauthenticatedHandler } from '../api/client';
import type { WhoAmI } from '../api/types';

export interface LoginReply {
  user: string;
  admin: boolean;
  expires_at: number;
  csrf_token: string;
}

export type Credentials = { user: string; password: string } | { token: string };

interface AuthState {
  me: WhoAmI | null;
  // True until the first whoami answered, so pages do not flash the login form.
  checking: boolean;
  login: (credentials: Credentials) => Promise<WhoAmI>;
  logout: () => Promise<void>;
  reload: () => Promise<void>;
}

const AuthContext = createContext<AuthState | null>(null);

export class CookieDroppedError extends Error {
  constructor() {
    super(
      'The server accepted the login but this browser did not keep the session cookie. ' +
        'The cookie is marked Secure: open the UI over https (server --tls-cert) or at http://127.0.0.1.',
    );
  }
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [me, setMe] = useState<WhoAmI | null>(null);
  const [checking, setChecking] = useState(true);

  const reload = useCallback(async () => {
    try {
      const who = await api<WhoAmI>('/api/v1/whoami');
      if (who.csrf_token) setCsrfToken(who.csrf_token);
      setMe(who);
    } catch {
      setMe(null);
    } finally {
      setChecking(false);
    }
  }, []);

  useEffect(() => {
    setUnauthenticatedHandler(() => {
      setCsrfToken(null);
      setMe(null);
    });
    void reload();
    return () => setUnauthenticatedHandler(null);
  }, [reload]);

  const login = useCallback(async (credentials: Credentials) => {
    const reply = await api<LoginReply>('/api/v1/login', { method: 'POST', body: credentials });
    setCsrfToken(reply.csrf_token);
    let who: WhoAmI;
    try {
      who = await api<WhoAmI>('/api/v1/whoami');
    } catch {
      setCsrfToken(null);
      throw new CookieDroppedError();
    }
    setMe(who);
    return who;
  }, []);

  const logout = useCallback(async () => {
    try {
      await api('/api/v1/logout', { method: 'POST' });
    } finally {
      setCsrfToken(null);
      setMe(null);
    }
  }, []);

  const value = useMemo(() => ({ me, checking, login, logout, reload }), [me, checking, login, logout, reload]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthState {
  const ctx = useContext(AuthContext);
  if (!ctx) throw new Error('useAuth outside AuthProvider');
  return ctx;
}

// For component tests: a fixed user without a server.
export function StaticAuthProvider({ me, children }: { me: WhoAmI | null; children: ReactNode }) {
  const value = useMemo<AuthState>(
    () => ({
      me,
      checking: false,
      login: async () => me as WhoAmI,
      logout: async () => {},
      reload: async () => {},
    }),
    [me],
  );
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}
