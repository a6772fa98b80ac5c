import { useEffect, useMemo } from 'react';
import { Button, Card, Empty, Flex, Form, Select } from 'antd';
import type { TableColumnsType } from 'antd';
import { useSearchParams } from 'react-router-dom';
import { api } from '../../api/client';
import { usePoll } from '../../api/usePoll';
import type { Role } from '../../api/types';
import { ROLES, type Member } from '../../lib/admin';
import { ADMIN_POLL_MS, AdminTable, ConfirmButton, ErrorAlert, TableAlerts, enc, useFormSubmit, useProjects, useReport, useRowAction, useUsers } from './common';

const ROLE_OPTIONS = ROLES.map((r) => ({ value: r, label: r }));

interface AddValues {
  user: string;
  role: Role;
}

export default function MembersTab() {
  const [params, setParams] = useSearchParams();
  const projects = useProjects();
  const users = useUsers();
  const [addForm] = Form.useForm<AddValues>();
  const action = useRowAction<string>();

  const projectNames = useMemo(() => (projects.data ?? []).map((p) => p.name).sort(), [projects.data]);
  const wanted = params.get('project') ?? '';
  const project = wanted || projectNames[0] || '';

  // Keep the choice in the URL, so a reload or a shared link shows the same project.
  const pickProject = (p: string) => {
    action.clearError();
    adding.setError(null);
    setParams({ project: p }, { replace: true });
  };

  const members = usePoll(
    (signal) =>
      project
        ? api<{ members: Member[] }>(`/api/v1/projects/${enc(project)}/members`, { signal }).then((r) => ({
            project,
            members: r.members,
          }))
        : Promise.resolve({ project, members: [] as Member[] }),
    ADMIN_POLL_MS,
    [project],
  );
  const report = useReport(members.refresh);

  useEffect(() => {
    addForm.resetFields();
  }, [project, addForm]);

  const memberUrl = (user: string) => `/api/v1/projects/${enc(project)}/members/${enc(user)}`;

  const setRole = (user: string, role: Role, done: string) =>
    action.run(user, async () => {
      await api(memberUrl(user), { method: 'PUT', body: { role } });
      report(done);
    });

  const adding = useFormSubmit(addForm, async (v: AddValues) => {
    await api(memberUrl(v.user), { method: 'PUT', body: { role: v.role } });
    addForm.resetFields();
    report(`Added ${v.user} to ${project} as ${v.role}`);
  });

  const remove = (user: string) =>
    action.run(user, async () => {
      await api(memberUrl(user), { method: 'DELETE' });
      report(`Removed ${user} from ${project}`);
    });

  // The members answer belongs to the project it was asked for; while the
  // next one loads, show nothing rather than the previous project's list.
  const rows = members.data?.project === project ? [...members.data.members].sort((a, b) => a.user.localeCompare(b.user)) : [];
  const memberNames = new Set(rows.map((m) => m.user));
  const userOptions = (users.data ?? [])
    .map((u) => u.name)
    .sort()
    .map((name) => ({ value: name, label: memberNames.has(name) ? `${name} (member)` : name }));

  const columns: TableColumnsType<Member> = [
    { title: 'User', dataIndex: 'user', key: 'user' },
    {
      title: 'Role',
      dataIndex: 'role',
      key: 'role',
      render: (role: Role, m) => (
        <Select<Role>
          aria-label={`Role of ${m.user}`}
          value={role}
          options={ROLE_OPTIONS}
          style={{ minWidth: 160 }}
          disabled={action.busy === m.user}
          onChange={(r) => setRole(m.user, r, `${m.user} is now ${r} in ${project}`)}
        />
      ),
    },
    {
      title: 'Actions',
      key: 'actions',
      render: (_, m) => (
        <ConfirmButton
          title={`Remove ${m.user} from ${project}?`}
          description="Their tokens limited to this project stop working here."
          okText="Remove"
          onConfirm={() => remove(m.user)}
          loading={action.busy === m.user}
        />
      ),
    },
  ];

  return (
    <>
      <Form layout="inline" name="members-project" style={{ marginBottom: 12 }}>
        <Form.Item label="Project" htmlFor="members-project-select">
          <Select
            id="members-project-select"
            showSearch
            style={{ minWidth: 220 }}
            value={project || undefined}
            placeholder={projects.loading ? 'Loading…' : 'No projects'}
            options={projectNames.map((p) => ({ value: p, label: p }))}
            onChange={pickProject}
          />
        </Form.Item>
      </Form>
      <ErrorAlert message={projects.error && !projects.data ? projects.error : null} />
      {!project ? (
        <Empty description="Create a project first (Projects tab)." />
      ) : (
        <>
          <Card size="small" title={`Add a member to ${project}`} style={{ marginBottom: 12 }}>
            <ErrorAlert message={adding.error} onClose={() => adding.setError(null)} />
            <Form<AddValues> form={addForm} layout="inline" name="add-member" onFinish={adding.onFinish} initialValues={{ role: 'engineer' }}>
              <Flex gap={8} wrap align="start">
                <Form.Item label="User" name="user" rules={[{ required: true, message: 'Pick a user' }]}>
                  <Select showSearch style={{ minWidth: 200 }} options={userOptions} placeholder="Pick a user" />
                </Form.Item>
                <Form.Item label="Role" name="role" rules={[{ required: true, message: 'Pick a role' }]}>
                  <Select style={{ minWidth: 160 }} options={ROLE_OPTIONS} />
                </Form.Item>
                <Form.Item>
                  <Button type="primary" htmlType="submit" loading={adding.busy}>
                    Add member
                  </Button>
                </Form.Item>
              </Flex>
            </Form>
          </Card>
          <TableAlerts loadError={members.error} action={action} />
          <AdminTable<Member>
            rowKey="user"
            columns={columns}
            dataSource={rows}
            loading={members.loading}
            locale={{ emptyText: `${project} has no members yet` }}
          />
        </>
      )}
    </>
  );
}
