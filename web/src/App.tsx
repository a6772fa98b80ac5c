import { App as AntApp, Button, ConfigProvider, Dropdown, Layout, Menu, Spin } from 'antd';
import {
  AppstoreOutlined,
  ClusterOutlined,
  DashboardOutlined,
  LogoutOutlined,
  PlusCircleOutlined,
  SafetyOutlined,
  UnorderedListOutlined,
  UserOutlined,
} from '@ant-design/icons';
import { BrowserRouter, Navigate, Route, Routes, useLocation, useNavigate } from 'react-router-dom';
import type { ReactNode } from 'react';
import { AuthProvider, useAuth } from './auth/AuthContext';
import { canSubmit, isAdmin } from './lib/roles';
import LoginPage from './pages/Login';
import OverviewPage from './pages/Overview';
import JobsPage from './pages/Jobs';
import JobPage from './pages/JobPage';
import SubmitPage from './pages/Submit';
import QueuesPage from './pages/Queues';
import NodesPage from './pages/Nodes';
import AdminPage from './pages/admin/Admin';
import NotFoundPage from './pages/NotFound';

const { Sider, Header, Content } = Layout;

function RequireAuth({ children }: { children: ReactNode }) {
  const { me, checking } = useAuth();
  const location = useLocation();
  if (checking) {
    return (
      <div style={{ display: 'grid', placeItems: 'center', height: '100vh' }}>
        <Spin size="large" />
      </div>
    );
  }
  if (!me) {
    const next = encodeURIComponent(location.pathname + location.search);
    return <Navigate to={`/login?next=${next}`} replace />;
  }
  return <>{children}</>;
}

function Shell({ children }: { children: ReactNode }) {
  const { me, logout } = useAuth();
  const navigate = useNavigate();
  const location = useLocation();
  const section = '/' + (location.pathname.split('/')[1] ?? '');
  const items = [
    { key: '/', icon: <DashboardOutlined />, label: 'Overview' },
    { key: '/jobs', icon: <UnorderedListOutlined />, label: 'Jobs' },
    ...(canSubmit(me) ? [{ key: '/submit', icon: <PlusCircleOutlined />, label: 'Submit' }] : []),
    { key: '/queues', icon: <AppstoreOutlined />, label: 'Queues' },
    { key: '/nodes', icon: <ClusterOutlined />, label: 'Nodes' },
    ...(isAdmin(me) ? [{ key: '/admin', icon: <SafetyOutlined />, label: 'Admin' }] : []),
  ];
  return (
    <Layout style={{ minHeight: '100vh' }}>
      <Sider breakpoint="lg" collapsedWidth={56} width={200} theme="dark">
        <div className="ty-brand" aria-label="Trainyard">
          Trainyard
        </div>
        <Menu
          theme="dark"
          mode="inline"
          selectedKeys={[section === '/overview' ? '/' : section]}
          items={items}
          onClick={(e) => navigate(e.key)}
        />
      </Sider>
      <Layout>
        <Header className="ty-header">
          <div style={{ flex: 1 }} />
          <Dropdown
            menu={{
              items: [
                {
                  key: 'logout',
                  icon: <LogoutOutlined />,
                  label: 'Log out',
                  onClick: async () => {
                    await logout();
                    navigate('/login');
                  },
                },
              ],
            }}
          >
            <Button type="text" icon={<UserOutlined />} data-testid="user-menu">
              {me?.user}
              {me?.admin ? ' (admin)' : ''}
            </Button>
          </Dropdown>
        </Header>
        <Content className="ty-content">{children}</Content>
      </Layout>
    </Layout>
  );
}

function Page({ children }: { children: ReactNode }) {
  return (
    <RequireAuth>
      <Shell>{children}</Shell>
    </RequireAuth>
  );
}

export function AppRoutes() {
  return (
    <Routes>
      <Route path="/login" element={<LoginPage />} />
      <Route path="/" element={<Page><OverviewPage /></Page>} />
      <Route path="/overview" element={<Navigate to="/" replace />} />
      <Route path="/jobs" element={<Page><JobsPage /></Page>} />
      <Route path="/jobs/:id" element={<Page><JobPage /></Page>} />
      <Route path="/submit" element={<Page><SubmitPage /></Page>} />
      <Route path="/queues" element={<Page><QueuesPage /></Page>} />
      <Route path="/nodes" element={<Page><NodesPage /></Page>} />
      <Route path="/admin" element={<Page><AdminPage /></Page>} />
      <Route path="/admin/:section" element={<Page><AdminPage /></Page>} />
      <Route path="*" element={<Page><NotFoundPage /></Page>} />
    </Routes>
  );
}

export default function App() {
  return (
    <ConfigProvider theme={{ token: { colorPrimary: '#1668dc', borderRadius: 6 } }}>
      <AntApp>
        <BrowserRouter>
          <AuthProvider>
            <AppRoutes />
          </AuthProvider>
        </BrowserRouter>
      </AntApp>
    </ConfigProvider>
  );
}
