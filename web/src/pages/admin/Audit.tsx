import { useState } from 'react';
import { Button, Flex, Form, Select, Table, Tag, Typography } from 'antd';
import type { TableColumnsType } from 'antd';
import { api, query } from '../../api/client';
import { usePoll } from '../../api/usePoll';
import { formatTime } from '../../lib/time';
import type { AuditPage, AuditRecord } from '../../lib/admin';
import { ADMIN_POLL_MS, ErrorAlert, useUsers } from './common';

const PAGE_SIZES = [50, 100, 200, 500];

function statusColor(status: number): string {
  if (status >= 500) return 'red';
  if (status >= 400) return 'orange';
  return 'green';
}

export default function AuditTab() {
  const users = useUsers();
  const [user, setUser] = useState<string | undefined>(undefined);
  const [limit, setLimit] = useState(100);
  // Cursors of the pages before the current one, newest first; the current
  // page's cursor is the last (undefined: the newest records).
  const [cursors, setCursors] = useState<(number | undefined)[]>([undefined]);
  const before = cursors[cursors.length - 1];
  const onFirstPage = before === undefined;

  // Only the newest page follows new records; an older page stays still
  // while being read.
  const page = usePoll(
    (signal) =>
      api<AuditPage>(`/api/v1/audit${query({ user, limit, before })}`, { signal }).then((p) => ({
        key: `${user ?? ''}|${limit}|${before ?? ''}`,
        ...p,
      })),
    onFirstPage ? ADMIN_POLL_MS : 0,
    [user, limit, before],
  );
  const current = page.data?.key === `${user ?? ''}|${limit}|${before ?? ''}` ? page.data : undefined;

  const restart = () => setCursors([undefined]);

  const columns: TableColumnsType<AuditRecord> = [
    { title: 'Time', dataIndex: 'at', key: 'at', render: (v: number) => formatTime(v), width: 180 },
    { title: 'User', dataIndex: 'user', key: 'user' },
    { title: 'Address', dataIndex: 'address', key: 'address' },
    { title: 'Method', dataIndex: 'method', key: 'method', render: (v: string) => <Tag>{v}</Tag> },
    {
      title: 'Path',
      dataIndex: 'path',
      key: 'path',
      render: (v: string) => <Typography.Text code>{v}</Typography.Text>,
    },
    {
      title: 'Status',
      dataIndex: 'status',
      key: 'status',
      render: (v: number) => <Tag color={statusColor(v)}>{v}</Tag>,
    },
    { title: 'Detail', dataIndex: 'detail', key: 'detail', render: (v: string) => v || '—' },
  ];

  return (
    <>
      <Flex justify="space-between" align="center" wrap gap={8} style={{ marginBottom: 12 }}>
        <Form layout="inline" name="audit-filter">
          <Form.Item label="User" htmlFor="audit-user">
            <Select
              id="audit-user"
              allowClear
              showSearch
              placeholder="Everyone"
              style={{ minWidth: 200 }}
              value={user}
              onChange={(v?: string) => {
                setUser(v || undefined);
                restart();
              }}
              options={(users.data ?? []).map((u) => ({ value: u.name, label: u.name }))}
            />
          </Form.Item>
          <Form.Item label="Per page" htmlFor="audit-limit">
            <Select
              id="audit-limit"
              style={{ width: 100 }}
              value={limit}
              onChange={(v: number) => {
                setLimit(v);
                restart();
              }}
              options={PAGE_SIZES.map((n) => ({ value: n, label: String(n) }))}
            />
          </Form.Item>
        </Form>
        <Flex gap={8}>
          <Button disabled={onFirstPage} onClick={restart}>
            Newest
          </Button>
          <Button disabled={onFirstPage} onClick={() => setCursors((c) => c.slice(0, -1))}>
            Newer
          </Button>
          <Button
            disabled={!current?.next_before}
            onClick={() => current?.next_before && setCursors((c) => [...c, current.next_before!])}
          >
            Older
          </Button>
        </Flex>
      </Flex>
      <ErrorAlert message={page.error} />
      <Table<AuditRecord>
        rowKey="seq"
        size="small"
        columns={columns}
        dataSource={current?.records ?? []}
        loading={!current && !page.error}
        pagination={false}
        scroll={{ x: true }}
        locale={{ emptyText: user ? `No changes by ${user}` : 'No changes recorded yet' }}
      />
    </>
  );
}
