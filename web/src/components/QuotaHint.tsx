import { Alert, Space } from 'antd';
import type { NodeInfo, Queue } from '../api/types';
import { computeQuotaHint, type QuotaHintInput } from '../lib/quota';

interface Props extends Omit<QuotaHintInput, 'queues' | 'nodes'> {
  queues: Queue[] | undefined;
  nodes: NodeInfo[] | undefined;
}

// "Project nlp has 6 of 8 A100 GPUs free": recomputed on every change of
// project, queue, GPU type, GPUs or replicas, and on each poll of the
// queues and nodes.
export default function QuotaHint({ queues, nodes, ...request }: Props) {
  if (!queues || !nodes) return null;
  const hint = computeQuotaHint({ queues, nodes, ...request });
  return (
    <div data-testid="quota-hint" aria-live="polite">
      <Space orientation="vertical" size={8} style={{ width: '100%' }}>
        <Alert type="info" showIcon title={hint.summary} />
        {hint.warnings.map((w) => (
          <Alert key={w} type="warning" showIcon title={w} />
        ))}
      </Space>
    </div>
  );
}
