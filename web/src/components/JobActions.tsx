import { useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { Alert, Button, Flex, Popconfirm } from 'antd';
import { CopyOutlined, RedoOutlined, StopOutlined } from '@ant-design/icons';
import { api, errorMessage } from '../api/client';
import type { Job } from '../api/types';
import { useAuth } from '../auth/AuthContext';
import { canCancel, canSubmitTo } from '../lib/roles';
import { isTerminal } from '../lib/jobs';

function newKey(): string {
  if (typeof crypto !== 'undefined' && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  // Plain-http pages on a host name are not a secure context and lack
  // randomUUID; the key only needs to be unique per click.
  return `rerun-${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

// The buttons a caller's role allows on this job; the others are not shown.
export function JobActions({ job, onChanged }: { job: Job; onChanged?: () => void }) {
  const { me } = useAuth();
  const navigate = useNavigate();
  const [busy, setBusy] = useState<'cancel' | 'rerun' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const mayCancel = canCancel(me, job) && !isTerminal(job.state);
  const maySubmit = canSubmitTo(me, job.project);
  if (!mayCancel && !maySubmit) return null;

  const cancel = async () => {
    setBusy('cancel');
    setError(null);
    try {
      await api(`/api/v1/jobs/${job.id}/cancel`, { method: 'POST' });
      setNotice('Cancel requested: the job gets SIGTERM, then SIGKILL after its grace period.');
      onChanged?.();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(null);
    }
  };

  const rerun = async () => {
    setBusy('rerun');
    setError(null);
    try {
      const created = await api<Job>('/api/v1/jobs', {
        method: 'POST',
        body: job.spec,
        headers: { 'Idempotency-Key': newKey() },
      });
      navigate(`/jobs/${created.id}`);
    } catch (e) {
      setError(`Rerun failed: ${errorMessage(e)}`);
    } finally {
      setBusy(null);
    }
  };

  return (
    <Flex vertical gap={8} align="flex-end">
      <Flex gap={8} wrap justify="flex-end">
        {maySubmit && (
          <Button icon={<CopyOutlined />} onClick={() => navigate(`/submit?from=${job.id}`)}>
            Clone and edit
          </Button>
        )}
        {maySubmit && (
          <Button icon={<RedoOutlined />} loading={busy === 'rerun'} onClick={rerun}>
            Rerun
          </Button>
        )}
        {mayCancel && (
          <Popconfirm
            title={`Cancel job ${job.id}?`}
            description={job.state === 'running' ? 'Its processes are stopped.' : 'It leaves the queue.'}
            okText="Yes, cancel"
            cancelText="No"
            okButtonProps={{ danger: true }}
            onConfirm={cancel}
          >
            <Button danger icon={<StopOutlined />} loading={busy === 'cancel'} disabled={!!job.cancel_requested_at}>
              {job.cancel_requested_at ? 'Cancelling…' : 'Cancel job'}
            </Button>
          </Popconfirm>
        )}
      </Flex>
      {error && (
        <Alert type="error" showIcon closable={{ onClose: () => setError(null) }} title={error} role="alert" />
      )}
      {notice && !error && (
        <Alert type="info" showIcon closable={{ onClose: () => setNotice(null) }} title={notice} />
      )}
    </Flex>
  );
}
