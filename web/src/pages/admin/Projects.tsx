import { useState } from 'react';
import { Button, Flex, Form, Input, Typography } from 'antd';
import type { TableColumnsType } from 'antd';
import { useNavigate } from 'react-router-dom';
import { api } from '../../api/client';
import { formatTime } from '../../lib/time';
import { nameRule, type Project } from '../../lib/admin';
import { ConfirmButton, FormModal, NamedListTable, TabToolbar, countOf, enc, useProjects, useReport, useRowAction } from './common';

function NewProjectModal({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (name: string) => void }) {
  return (
    <FormModal<{ name: string }>
      open={open}
      title="New project"
      okText="Create"
      name="new-project"
      onCancel={onClose}
      submit={async (v, form) => {
        const p = await api<Project>('/api/v1/projects', { method: 'POST', body: { name: v.name.trim() } });
        form.resetFields();
        onCreated(p.name);
      }}
    >
      <Form.Item label="Name" name="name" rules={[{ required: true, message: 'Give the project a name' }, nameRule]}>
        <Input autoFocus autoComplete="off" />
      </Form.Item>
    </FormModal>
  );
}

function WebhookModal({ project, onClose, onSaved }: { project: Project | null; onClose: () => void; onSaved: () => void }) {
  return (
    <FormModal<{ webhook_url?: string }>
      open={!!project}
      title={project ? `Webhook of ${project.name}` : 'Webhook'}
      okText="Save"
      name="project-webhook"
      initialValues={{ webhook_url: project?.webhook_url ?? '' }}
      onCancel={onClose}
      submit={async (v) => {
        if (!project) return;
        await api(`/api/v1/projects/${enc(project.name)}`, {
          method: 'PATCH',
          body: { webhook_url: (v.webhook_url ?? '').trim() },
        });
        onSaved();
      }}
    >
      <Form.Item
        label="Webhook URL"
        name="webhook_url"
        extra="The server POSTs here when one of the project's jobs finishes. Leave empty to remove it."
        rules={[{ type: 'url', message: 'Give an http:// or https:// URL, or leave it empty' }]}
      >
        <Input autoFocus placeholder="https://hooks.example.org/…" autoComplete="off" />
      </Form.Item>
    </FormModal>
  );
}

export default function ProjectsTab() {
  const navigate = useNavigate();
  const projects = useProjects();
  const report = useReport(projects.refresh);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Project | null>(null);
  // A refused delete (409) lists the unfinished jobs: long, so it stays above the table.
  const action = useRowAction<string>();

  const remove = (p: Project) =>
    action.run(p.name, async () => {
      await api(`/api/v1/projects/${enc(p.name)}`, { method: 'DELETE' });
      report(`Deleted project ${p.name}`);
    });

  const columns: TableColumnsType<Project> = [
    { title: 'Name', dataIndex: 'name', key: 'name' },
    {
      title: 'Webhook URL',
      dataIndex: 'webhook_url',
      key: 'webhook_url',
      render: (v?: string) =>
        v ? (
          <Typography.Text code ellipsis={{ tooltip: v }} style={{ maxWidth: 360 }}>
            {v}
          </Typography.Text>
        ) : (
          '—'
        ),
    },
    { title: 'Created', dataIndex: 'created_at', key: 'created_at', render: (v: number) => formatTime(v) },
    {
      title: 'Actions',
      key: 'actions',
      render: (_, p) => (
        <Flex gap={4} wrap>
          <Button size="small" onClick={() => setEditing(p)}>
            Edit webhook
          </Button>
          <Button size="small" onClick={() => navigate(`/admin/members?project=${enc(p.name)}`)}>
            Members
          </Button>
          <ConfirmButton
            title={`Delete project ${p.name}?`}
            description="Its memberships and project tokens are deleted too. Refused while it has unfinished jobs."
            okText="Delete"
            onConfirm={() => remove(p)}
          />
        </Flex>
      ),
    },
  ];

  return (
    <>
      <TabToolbar left={<span>{countOf(projects.data, 'projects')}</span>} newLabel="New project" onNew={() => setCreating(true)} />
      <NamedListTable list={projects} action={action} columns={columns} />
      <NewProjectModal
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(name) => {
          setCreating(false);
          report(`Created project ${name}`);
        }}
      />
      <WebhookModal
        project={editing}
        onClose={() => setEditing(null)}
        onSaved={() => {
          report(`Saved webhook of ${editing?.name}`);
          setEditing(null);
        }}
      />
    </>
  );
}
