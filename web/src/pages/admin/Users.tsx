import { useState } from 'react';
import { Button, Flex, Form, Input, Switch, Tag, Tooltip } from 'antd';
import type { TableColumnsType } from 'antd';
import { api } from '../../api/client';
import { useAuth } from '../../auth/AuthContext';
import { formatTime } from '../../lib/time';
import { nameRule, type User } from '../../lib/admin';
import { ConfirmButton, FormModal, NamedListTable, TabToolbar, YesNo, countOf, enc, useReport, useRowAction, useUsers } from './common';

interface NewUserValues {
  name: string;
  password?: string;
  admin?: boolean;
}

function NewUserModal({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (u: User) => void }) {
  return (
    <FormModal<NewUserValues>
      open={open}
      title="New user"
      okText="Create"
      name="new-user"
      initialValues={{ admin: false }}
      onCancel={onClose}
      submit={async (v, form) => {
        const body: { name: string; admin: boolean; password?: string } = { name: v.name.trim(), admin: !!v.admin };
        // No password means token-only sign-in until an admin sets one.
        if (v.password) body.password = v.password;
        const user = await api<User>('/api/v1/users', { method: 'POST', body });
        form.resetFields();
        onCreated(user);
      }}
    >
      <Form.Item label="Name" name="name" rules={[{ required: true, message: 'Give the user a name' }, nameRule]}>
        <Input autoFocus autoComplete="off" />
      </Form.Item>
      <Form.Item
        label="Password"
        name="password"
        extra="Optional: without one the user signs in with API tokens only."
      >
        <Input.Password autoComplete="new-password" />
      </Form.Item>
      <Form.Item label="Admin" name="admin" valuePropName="checked">
        <Switch />
      </Form.Item>
    </FormModal>
  );
}

interface PasswordValues {
  password: string;
  current_password?: string;
}

function SetPasswordModal({ user, self, onClose, onDone }: { user: User | null; self: boolean; onClose: () => void; onDone: () => void }) {
  const needsCurrent = self && !!user?.has_password;
  return (
    <FormModal<PasswordValues>
      open={!!user}
      title={user ? `Set password of ${user.name}` : 'Set password'}
      okText="Set password"
      name="set-password"
      onCancel={onClose}
      submit={async (v) => {
        if (!user) return;
        const body: PasswordValues = { password: v.password };
        if (needsCurrent) body.current_password = v.current_password;
        await api(`/api/v1/users/${enc(user.name)}/password`, { method: 'PUT', body });
        onDone();
      }}
    >
      {needsCurrent && (
        <Form.Item label="Current password" name="current_password" rules={[{ required: true, message: 'Needed to change your own password' }]}>
          <Input.Password autoComplete="current-password" />
        </Form.Item>
      )}
      <Form.Item
        label="New password"
        name="password"
        rules={[{ required: true, message: 'Give a password' }]}
        extra={user?.locked_until ? 'A new password also lifts the lock after failed sign-ins.' : undefined}
      >
        <Input.Password autoFocus autoComplete="new-password" />
      </Form.Item>
    </FormModal>
  );
}

export default function UsersTab() {
  const { me } = useAuth();
  const users = useUsers();
  const report = useReport(users.refresh);
  const [creating, setCreating] = useState(false);
  const [passwordFor, setPasswordFor] = useState<User | null>(null);
  const action = useRowAction<string>();

  const patch = (u: User, change: { admin?: boolean; disabled?: boolean }, done: string) =>
    action.run(u.name, async () => {
      await api(`/api/v1/users/${enc(u.name)}`, { method: 'PATCH', body: change });
      report(done);
    });

  const columns: TableColumnsType<User> = [
    { title: 'Name', dataIndex: 'name', key: 'name' },
    { title: 'Admin', dataIndex: 'admin', key: 'admin', render: (v: boolean) => <YesNo value={v} yes="admin" color="gold" /> },
    { title: 'Disabled', dataIndex: 'disabled', key: 'disabled', render: (v: boolean) => <YesNo value={v} yes="disabled" color="red" /> },
    { title: 'Has password', dataIndex: 'has_password', key: 'has_password', render: (v: boolean) => (v ? 'yes' : 'no') },
    { title: 'Created', dataIndex: 'created_at', key: 'created_at', render: (v: number) => formatTime(v) },
    {
      title: 'Locked until',
      dataIndex: 'locked_until',
      key: 'locked_until',
      render: (v: number) => (v ? <Tag color="orange">{formatTime(v)}</Tag> : '—'),
    },
    {
      title: 'Actions',
      key: 'actions',
      render: (_, u) => {
        const self = u.name === me?.user;
        const selfNote = self ? 'Another administrator has to make this change for you' : undefined;
        const busy = action.busy === u.name;
        return (
          <Flex gap={4} wrap>
            <Tooltip title={u.admin ? selfNote : undefined}>
              <Button
                size="small"
                loading={busy}
                disabled={self && u.admin}
                onClick={() => patch(u, { admin: !u.admin }, u.admin ? `${u.name} is no longer an admin` : `${u.name} is now an admin`)}
              >
                {u.admin ? 'Revoke admin' : 'Make admin'}
              </Button>
            </Tooltip>
            {u.disabled ? (
              <Button size="small" loading={busy} onClick={() => patch(u, { disabled: false }, `${u.name} is enabled`)}>
                Enable
              </Button>
            ) : (
              <ConfirmButton
                title={`Disable ${u.name}?`}
                description="They can no longer sign in or use their tokens until enabled again."
                okText="Disable"
                onConfirm={() => patch(u, { disabled: true }, `${u.name} is disabled`)}
                loading={busy}
                disabled={self}
                tooltip={selfNote}
              />
            )}
            <Button size="small" onClick={() => setPasswordFor(u)}>
              Set password
            </Button>
          </Flex>
        );
      },
    },
  ];

  return (
    <>
      <TabToolbar left={<span>{countOf(users.data, 'users')}</span>} newLabel="New user" onNew={() => setCreating(true)} />
      <NamedListTable list={users} action={action} columns={columns} />
      <NewUserModal
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(u) => {
          setCreating(false);
          report(`Created user ${u.name}`);
        }}
      />
      <SetPasswordModal
        user={passwordFor}
        self={passwordFor?.name === me?.user}
        onClose={() => setPasswordFor(null)}
        onDone={() => {
          report(`Password of ${passwordFor?.name} set`);
          setPasswordFor(null);
        }}
      />
    </>
  );
}
