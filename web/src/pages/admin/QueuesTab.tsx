import { useMemo, useState } from 'react';
import { Alert, Button, Flex, Tag } from 'antd';
import type { TableColumnsType } from 'antd';
import { api } from '../../api/client';
import { usePoll } from '../../api/usePoll';
import type { NodeInfo, Queue } from '../../api/types';
import { queueToEditForm, sortResources } from '../../lib/queues';
import { describeQuota } from '../../lib/admin';
import { ADMIN_POLL_MS, ConfirmButton, NamedListTable, TabToolbar, countOf, enc, useProjects, useReport, useRowAction } from './common';
import QueueEditor from './QueueEditor';

interface Saved {
  name: string;
  created: boolean;
  note?: string;
}

export default function QueuesTab() {
  const queues = usePoll(
    (signal) => api<{ queues: Queue[] }>('/api/v1/queues', { signal }).then((r) => r.queues),
    ADMIN_POLL_MS,
    [],
  );
  const report = useReport(queues.refresh);
  const projects = useProjects();
  // GPU models only feed the editor's suggestions for gpu:<model>; loaded once.
  const nodes = usePoll(
    (signal) => api<{ nodes: NodeInfo[] }>('/api/v1/nodes', { signal }).then((r) => r.nodes),
    0,
    [],
  );
  const [editor, setEditor] = useState<{ queue: Queue | null } | null>(null);
  const [saved, setSaved] = useState<Saved | null>(null);
  const action = useRowAction<string>();

  const gpuModels = useMemo(() => {
    const models = new Set<string>();
    for (const n of nodes.data ?? []) for (const g of n.gpus ?? []) if (g.model) models.add(g.model);
    return [...models].sort();
  }, [nodes.data]);
  const projectNames = useMemo(() => (projects.data ?? []).map((p) => p.name).sort(), [projects.data]);

  const remove = (q: Queue) =>
    action.run(q.name, async () => {
      setSaved(null);
      await api(`/api/v1/queues/${enc(q.name)}`, { method: 'DELETE' });
      report(`Deleted queue ${q.name}`);
    });

  const openEditor = (queue: Queue | null) => {
    setSaved(null);
    setEditor({ queue });
  };

  const columns: TableColumnsType<Queue> = [
    { title: 'Name', dataIndex: 'name', key: 'name' },
    {
      title: 'Projects',
      dataIndex: 'projects',
      key: 'projects',
      render: (ps: string[] | undefined) =>
        ps && ps.length ? ps.join(', ') : <span title="Projects without a queue of their own">others</span>,
    },
    { title: 'Cohort', dataIndex: 'cohort', key: 'cohort', render: (c?: string | null) => c || '—' },
    { title: 'Weight', dataIndex: 'weight', key: 'weight' },
    {
      title: 'Quotas',
      key: 'quotas',
      render: (_, q) => {
        const quota = queueToEditForm(q).quota;
        const names = sortResources(Object.keys(quota).map((name) => ({ name })));
        if (!names.length) return 'not limited';
        return (
          <Flex gap={4} wrap>
            {names.map(({ name }) => (
              <Tag key={name}>{describeQuota(name, quota[name])}</Tag>
            ))}
          </Flex>
        );
      },
    },
    { title: 'Pending', dataIndex: 'pending', key: 'pending' },
    { title: 'Running', dataIndex: 'running', key: 'running' },
    {
      title: 'Actions',
      key: 'actions',
      render: (_, q) => (
        <Flex gap={4} wrap>
          <Button size="small" onClick={() => openEditor(q)}>
            Edit
          </Button>
          <ConfirmButton
            title={`Delete queue ${q.name}?`}
            description="Its projects fall back to the queue named default. Refused while it has pending or running jobs."
            okText="Delete"
            onConfirm={() => remove(q)}
            loading={action.busy === q.name}
          />
        </Flex>
      ),
    },
  ];

  return (
    <>
      <TabToolbar left={<span>{countOf(queues.data, 'queues')}</span>} newLabel="New queue" onNew={() => openEditor(null)} />
      {saved && (
        <Alert
          type={saved.note ? 'warning' : 'success'}
          showIcon
          role="status"
          title={`${saved.created ? 'Created' : 'Saved'} queue ${saved.name}; in force from the next scheduling pass.`}
          description={saved.note}
          closable={{ onClose: () => setSaved(null), 'aria-label': 'Dismiss' }}
          style={{ marginBottom: 12 }}
          data-testid="queue-saved"
        />
      )}
      <NamedListTable list={queues} action={action} columns={columns} />
      <QueueEditor
        open={!!editor}
        queue={editor?.queue ?? null}
        projects={projectNames}
        gpuModels={gpuModels}
        onClose={() => setEditor(null)}
        onSaved={(reply) => {
          setSaved({ name: reply.name, created: !editor?.queue, note: reply.note });
          setEditor(null);
          queues.refresh();
        }}
      />
    </>
  );
}
