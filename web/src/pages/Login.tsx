import { useState } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router-dom';
import { Alert, Button, Card, Flex, Form, Input, Typography } from 'antd';
import { ApiError, errorMessage } from '../api/client';
import { CookieDroppedError, useAuth, type Credentials } from '../auth/AuthContext';
import { ButtonChoice, type Choice } from '../components/ButtonChoice';

// Only a path of this site: "//evil.example" and "https://..." would send
// the user elsewhere after signing in.
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  return next;
}

function sentence(text: string): string {
  const t = text.trim();
  if (!t) return t;
  const s = t[0].toUpperCase() + t.slice(1);
  return /[.!?)]$/.test(s) ? s : `${s}.`;
}

function waitWords(seconds: number): string {
  if (seconds < 60) return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  const m = Math.ceil(seconds / 60);
  return `${m} ${m === 1 ? 'minute' : 'minutes'}`;
}

export function loginErrorText(e: unknown): string {
  if (e instanceof CookieDroppedError) return e.message;
  if (e instanceof ApiError) {
    let m = e.message;
    if (e.status === 429) {
      // The client adds "(retry in N s)" from Retry-After; the server's words
      // often say the minutes already.
      const r = /\s*\(retry in (\d+) s\)$/.exec(m);
      if (r) {
        m = m.slice(0, r.index);
        if (!/again in \d+/.test(m)) m += `; try again in ${waitWords(Number(r[1]))}`;
      }
    }
    return sentence(m);
  }
  return sentence(errorMessage(e));
}

interface LoginValues {
  user?: string;
  password?: string;
  token?: string;
}

type Mode = 'password' | 'token';
const MODES: Choice<Mode>[] = [
  { value: 'password', label: 'Password' },
  { value: 'token', label: 'Token' },
];

export default function LoginPage() {
  const { me, checking, login } = useAuth();
  const navigate = useNavigate();
  const [search] = useSearchParams();
  const next = safeNext(search.get('next'));
  const [form] = Form.useForm<LoginValues>();
  const [mode, setMode] = useState<Mode>('password');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  if (!checking && me && !busy) return <Navigate to={next} replace />;

  const submit = async () => {
    const names: (keyof LoginValues)[] = mode === 'password' ? ['user', 'password'] : ['token'];
    let values: LoginValues;
    try {
      values = await form.validateFields(names);
    } catch {
      return;
    }
    const credentials: Credentials =
      mode === 'password'
        ? { user: (values.user ?? '').trim(), password: values.password ?? '' }
        : { token: (values.token ?? '').trim() };
    setError(null);
    setBusy(true);
    try {
      await login(credentials);
      navigate(next, { replace: true });
    } catch (e) {
      const field = e instanceof ApiError ? e.field : undefined;
      const named = names.find((n) => n === field);
      if (named) {
        form.setFields([{ name: named, errors: [sentence(e instanceof Error ? e.message : String(e))] }]);
      } else {
        setError(loginErrorText(e));
      }
      setBusy(false);
    }
  };

  const passwordTab = (
    <>
      <Form.Item label="User" name="user" rules={[{ required: true, message: 'Enter your user name' }]}>
        <Input autoComplete="username" autoFocus />
      </Form.Item>
      <Form.Item label="Password" name="password" rules={[{ required: true, message: 'Enter your password' }]}>
        <Input.Password autoComplete="current-password" />
      </Form.Item>
    </>
  );
  const tokenTab = (
    <Form.Item
      label="Token"
      name="token"
      rules={[{ required: true, message: 'Paste an API token' }]}
      extra={
        <>
          The bootstrap admin token (the file <Typography.Text code>admin.token</Typography.Text> in the server's data
          directory) or a token made with <Typography.Text code>trainyard tokens create</Typography.Text>.
        </>
      }
    >
      <Input.Password autoComplete="off" placeholder="ty_…" />
    </Form.Item>
  );

  return (
    <Flex align="center" justify="center" style={{ minHeight: '100vh', padding: 16, background: '#f5f7fa' }}>
      <Card style={{ width: '100%', maxWidth: 420 }}>
        <Typography.Title level={3} style={{ marginTop: 0, textAlign: 'center' }}>
          Sign in to Trainyard
        </Typography.Title>
        {error && (
          <Alert type="error" showIcon title={error} style={{ marginBottom: 16 }} data-testid="login-error" role="alert" />
        )}
        <Form<LoginValues> form={form} layout="vertical" name="login" onFinish={submit} requiredMark={false}>
          {/* Two buttons rather than antd Tabs: a tab panel takes its tab's
              name as its label, which would give two things labelled
              "Password" and "Token". */}
          <ButtonChoice
            role="tablist"
            label="How to sign in"
            block
            style={{ marginBottom: 16 }}
            options={MODES}
            value={mode}
            onChange={(m) => {
              setMode(m);
              setError(null);
            }}
          />
          {mode === 'password' ? passwordTab : tokenTab}
          <Button type="primary" htmlType="submit" block size="large" loading={busy}>
            Log in
          </Button>
        </Form>
      </Card>
    </Flex>
  );
}
