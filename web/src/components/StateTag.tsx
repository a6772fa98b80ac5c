import { Tag } from 'antd';
import type { JobState } from '../api/types';

export const STATE_COLORS: Record<string, string> = {
  pending: 'gold',
  scheduled: 'cyan',
  running: 'processing',
  succeeded: 'success',
  failed: 'error',
  cancelled: 'default',
  preempted: 'purple',
};

export function StateTag({ state }: { state: JobState | string }) {
  return (
    <Tag color={STATE_COLORS[state] ?? 'default'} data-state={state}>
      {state}
    </Tag>
  );
}
