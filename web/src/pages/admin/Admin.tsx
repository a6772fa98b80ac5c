import { useEffect } from 'react';
import { Result, Tabs, Typography } from 'antd';
import { useNavigate, useParams } from 'react-router-dom';
import { useAuth } from '../../auth/AuthContext';
import { isAdmin } from '../../lib/roles';
import UsersTab from './Users';
import ProjectsTab from './Projects';
import MembersTab from './Members';
import TokensTab from './Tokens';
import AuditTab from './Audit';
import QueuesTab from './QueuesTab';

const SECTIONS = [
  { key: 'users', label: 'Users', render: () => <UsersTab /> },
  { key: 'projects', label: 'Projects', render: () => <ProjectsTab /> },
  { key: 'members', label: 'Members', render: () => <MembersTab /> },
  { key: 'tokens', label: 'Tokens', render: () => <TokensTab /> },
  { key: 'audit', label: 'Audit log', render: () => <AuditTab /> },
  { key: 'queues', label: 'Queues', render: () => <QueuesTab /> },
] as const;

export default function AdminPage() {
  const { me } = useAuth();
  const { section } = useParams();
  const navigate = useNavigate();
  const active = SECTIONS.find((s) => s.key === section) ?? SECTIONS[0];

  useEffect(() => {
    document.title = `Administration · ${active.label} · Trainyard`;
  }, [active]);

  if (!isAdmin(me)) {
    return (
      <>
        <Typography.Title level={3}>Administration</Typography.Title>
        <Result
          status="403"
          title="Administration needs a global admin"
          subTitle="Ask a global administrator for the change you need, or to make you one."
        />
      </>
    );
  }

  return (
    <>
      <Typography.Title level={3}>Administration</Typography.Title>
      <Tabs
        activeKey={active.key}
        onChange={(key) => navigate(`/admin/${key}`)}
        // Hidden tabs stop polling: each tab loads its own data when shown.
        destroyOnHidden
        items={SECTIONS.map((s) => ({ key: s.key, label: s.label, children: s.render() }))}
      />
    </>
  );
}
