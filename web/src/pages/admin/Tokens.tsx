import { useState } from 'react';
import { Alert, Flex, Form, Input, Modal, Select, Tag, Typography } from 'antd';
import type { TableColumnsType } from 'antd';
import { api, query } from '../../api/client';
import { usePoll } from '../../api/usePoll';
import { useAuth } from '../../auth/AuthContext';
import { formatTime, fromNow } from '../../lib/time';
import { tokenStatus, validExpiresIn, validTokenName, type ApiToken } from '../../lib/admin';
import { ADMIN_POLL_MS, AdminTable, ConfirmButton, FormModal, TabToolbar, TableAlerts, problemRule, useProjects, useReport, useRowAction, useUsers } from './common';

interface NewTokenValues {
  name: string;
  expires_in?: string;
  project?: string;
  user?: string;
}

const STATUS_COLOR = { live: 'green', revoked: 'default', expired: 'orange' } as const;

function NewTokenModal({
  open,
  defaultUser,
  onClose,
  onCreated,
}: {
  open: boolean;
  defaultUser: string;
  onClose: () => void;
  onCreated: () => void;
}) {
  const { me } = useAuth();
  const projects = useProjects();
  const users = useUsers();
  const [created, setCreated] = useState<ApiToken | null>(null);

  const close = () => {
    setCreated(null);
    onClose();
  };

  const create = async (v: NewTokenValues) => {
    const body: NewTokenValues = { name: v.name.trim() };
    if (v.expires_in?.trim()) body.expires_in = v.expires_in.trim();
    if (v.project) body.project = v.project;
    if (v.user && v.user !== me?.user) body.user = v.user;
    const token = await api<ApiToken>('/api/v1/tokens', { method: 'POST', body });
    setCreated(token);
    onCreated();
  };

  if (created) {
    return (
      <Modal
        open={open}
        title={`Token ${created.name} created`}
        okText="Done"
        onOk={close}
        onCancel={close}
        cancelButtonProps={{ style: { display: 'none' } }}
        destroyOnHidden
        mask={{ closable: false }}
      >
        <Alert
          type="warning"
          showIcon
          title="Copy the token now: it is shown only once and cannot be recovered."
          description={`It acts as ${created.user}${created.project ? ` in project ${created.project} only` : ''}${
            created.expires_at ? ` until ${formatTime(created.expires_at)}` : ', with no expiry'
          }. Use it as "Authorization: Bearer <token>" or with trainyard login.`}
          style={{ marginBottom: 12 }}
        />
        <Form layout="vertical" name="token-secret">
          <Form.Item label="Token" htmlFor="new-token-secret">
            <Flex gap={8} align="center">
              <Input
                id="new-token-secret"
                readOnly
                value={created.token ?? ''}
                data-testid="token-secret"
                onFocus={(e) => e.currentTarget.select()}
                style={{ fontFamily: 'monospace' }}
              />
              <Typography.Text copyable={{ text: created.token ?? '', tooltips: ['Copy token', 'Copied'] }} />
            </Flex>
          </Form.Item>
        </Form>
      </Modal>
    );
  }

  const userOptions = (users.data ?? []).map((u) => ({ value: u.name, label: u.name }));
  return (
    <FormModal<NewTokenValues>
      open={open}
      title="New token"
      okText="Create"
      name="new-token"
      initialValues={{ expires_in: '30d', user: defaultUser }}
      onCancel={close}
      submit={create}
      mapField={(f) => (f === 'expires_at' ? ['expires_in'] : [f])}
    >
      <Form.Item
        label="Name"
        name="name"
        rules={[
          { required: true, message: 'Give the token a name, e.g. ci or laptop' },
          problemRule((v) => (v && !validTokenName(String(v)) ? 'use 1-64 printable characters' : null)),
        ]}
      >
        <Input autoFocus autoComplete="off" placeholder="ci" />
      </Form.Item>
      <Form.Item
        label="Expires in"
        name="expires_in"
        extra="e.g. 30d, 12h, 90m or seconds (at most 366 days); empty: never expires"
        rules={[
          problemRule((v) =>
            v && String(v).trim() && !validExpiresIn(String(v))
              ? 'a duration such as 30d, 12h or 90m, above 0 and at most 366 days'
              : null,
          ),
        ]}
      >
        <Input autoComplete="off" placeholder="30d" />
      </Form.Item>
      <Form.Item label="Project" name="project" extra="Optional: the token then acts in this project only.">
        <Select
          allowClear
          showSearch
          placeholder="All the user's projects"
          options={(projects.data ?? []).map((p) => ({ value: p.name, label: p.name }))}
        />
      </Form.Item>
      {me?.admin && (
        <Form.Item label="User" name="user" extra="Whose token: it acts with that user's rights.">
          <Select showSearch options={userOptions} />
        </Form.Item>
      )}
    </FormModal>
  );
}

export default function TokensTab() {
  const { me } = useAuth();
  const users = useUsers();
  const [owner, setOwner] = useState(me?.user ?? '');
  const [creating, setCreating] = useState(false);
  const action = useRowAction<number>();

  const tokens = usePoll(
    (signal) =>
      api<{ tokens: ApiToken[] }>(`/api/v1/tokens${query({ user: owner })}`, { signal }).then((r) => ({
        owner,
        tokens: r.tokens,
      })),
    ADMIN_POLL_MS,
    [owner],
  );
  const report = useReport(tokens.refresh);
  const rows = tokens.data?.owner === owner ? [...tokens.data.tokens].sort((a, b) => b.id - a.id) : [];

  const revoke = (t: ApiToken) =>
    action.run(t.id, async () => {
      await api(`/api/v1/tokens/${t.id}${query({ user: t.user })}`, { method: 'DELETE' });
      report(`Revoked token ${t.name}`);
    });

  const now = Date.now();
  const columns: TableColumnsType<ApiToken> = [
    { title: 'ID', dataIndex: 'id', key: 'id' },
    { title: 'Name', dataIndex: 'name', key: 'name' },
    { title: 'User', dataIndex: 'user', key: 'user' },
    {
      title: 'Prefix',
      dataIndex: 'prefix',
      key: 'prefix',
      render: (v: string) => <Typography.Text code>{`ty_${v}…`}</Typography.Text>,
    },
    { title: 'Project', dataIndex: 'project', key: 'project', render: (v: string | null) => v ?? 'all' },
    { title: 'Created', dataIndex: 'created_at', key: 'created_at', render: (v: number) => formatTime(v) },
    {
      title: 'Expires',
      dataIndex: 'expires_at',
      key: 'expires_at',
      render: (v: number | null) => (v ? <span title={fromNow(v)}>{formatTime(v)}</span> : 'never'),
    },
    {
      title: 'Last used',
      dataIndex: 'last_used_at',
      key: 'last_used_at',
      render: (v: number | null) => (v ? <span title={formatTime(v)}>{fromNow(v)}</span> : 'never'),
    },
    {
      title: 'Status',
      key: 'status',
      render: (_, t) => {
        const s = tokenStatus(t, now);
        return <Tag color={STATUS_COLOR[s]}>{s}</Tag>;
      },
    },
    {
      title: 'Actions',
      key: 'actions',
      render: (_, t) =>
        t.revoked_at ? null : (
          <ConfirmButton
            title={`Revoke token ${t.name}?`}
            description="Programs using it are refused from now on. This cannot be undone."
            okText="Revoke"
            onConfirm={() => revoke(t)}
            loading={action.busy === t.id}
          />
        ),
    },
  ];

  return (
    <>
      <TabToolbar
        newLabel="New token"
        onNew={() => setCreating(true)}
        left={
          me?.admin ? (
            <Form layout="inline" name="tokens-filter">
              <Form.Item label="Tokens of" htmlFor="tokens-owner">
                <Select
                  id="tokens-owner"
                  showSearch
                  style={{ minWidth: 200 }}
                  value={owner}
                  onChange={(v) => {
                    action.clearError();
                    setOwner(v);
                  }}
                  options={(users.data ?? [{ name: owner }]).map((u) => ({ value: u.name, label: u.name }))}
                />
              </Form.Item>
            </Form>
          ) : (
            <span />
          )
        }
      />
      <TableAlerts loadError={tokens.error} action={action} />
      <AdminTable<ApiToken>
        rowKey="id"
        columns={columns}
        dataSource={rows}
        loading={tokens.loading}
        locale={{ emptyText: `${owner} has no tokens` }}
      />
      <NewTokenModal
        open={creating}
        defaultUser={owner}
        onClose={() => setCreating(false)}
        onCreated={() => tokens.refresh()}
      />
    </>
  );
}
