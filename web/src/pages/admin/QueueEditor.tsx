import { useMemo } from 'react';
import { AutoComplete, Button, Col, Form, Input, InputNumber, Row, Typography } from 'antd';
import { DeleteOutlined, PlusOutlined } from '@ant-design/icons';
import { api } from '../../api/client';
import type { Queue } from '../../api/types';
import { queueToEditForm } from '../../lib/queues';
import {
  QUOTA_RESOURCE_TEXT,
  amountProblem,
  emptyQueueForm,
  knownQuotaResource,
  nameRule,
  queueFieldPath,
  queueFormFromBody,
  queuePutBodyFromForm,
  type QueueFormValues,
  type QueuePutReply,
  type QuotaRow,
} from '../../lib/admin';
import { FormModal, enc, problemRule } from './common';

export interface QueueEditorProps {
  open: boolean;
  // The queue to edit; null for a new one.
  queue: Queue | null;
  projects: string[];
  gpuModels: string[];
  onClose: () => void;
  onSaved: (reply: QueuePutReply) => void;
}

function amountRule(getResource: () => string, required: boolean) {
  return problemRule((value) => {
    const text = value === undefined || value === null ? '' : String(value).trim();
    if (!text) return required ? 'Give the nominal quota' : null;
    return amountProblem(getResource(), text);
  });
}

// The amount columns of a quota row.
const AMOUNT_FIELDS = [
  { key: 'nominal', label: 'Nominal', md: 4, required: true, placeholder: '8', tooltip: undefined },
  {
    key: 'borrowing_limit',
    label: 'Borrowing limit',
    md: 5,
    required: false,
    placeholder: 'no limit',
    tooltip: 'How much above nominal the queue may take from its cohort',
  },
  {
    key: 'lending_limit',
    label: 'Lending limit',
    md: 5,
    required: false,
    placeholder: 'no limit',
    tooltip: 'How much of its unused nominal others of the cohort may use',
  },
] as const;

export default function QueueEditor({ open, queue, projects, gpuModels, onClose, onSaved }: QueueEditorProps) {
  const [form] = Form.useForm<QueueFormValues>();
  const editing = !!queue;

  const initial = useMemo(
    () => (queue ? queueFormFromBody(queue.name, queueToEditForm(queue)) : emptyQueueForm()),
    [queue],
  );

  const resourceOptions = useMemo(
    () =>
      ['gpu', ...gpuModels.map((m) => `gpu:${m}`), 'cpu', 'memory'].map((value) => ({ value })),
    [gpuModels],
  );

  const save = async (v: QueueFormValues) => {
    const name = (queue?.name ?? v.name).trim();
    const reply = await api<QueuePutReply>(`/api/v1/queues/${enc(name)}`, {
      method: 'PUT',
      body: queuePutBodyFromForm({ ...v, name }),
    });
    onSaved(reply);
  };
  const quotaRows = (): QuotaRow[] => form.getFieldValue('quota') ?? [];

  const rowResource = (i: number) => String(form.getFieldValue(['quota', i, 'resource']) ?? '').trim();

  return (
    <FormModal<QueueFormValues>
      open={open}
      title={editing ? `Edit queue ${queue!.name}` : 'New queue'}
      okText={editing ? 'Save' : 'Create'}
      name="queue"
      form={form}
      width={920}
      initialValues={initial}
      onCancel={onClose}
      submit={save}
      mapField={(f) => queueFieldPath(f, quotaRows())}
    >
      <Row gutter={12}>
        <Col xs={24} md={12}>
          <Form.Item label="Name" name="name" rules={[{ required: true, message: 'Give the queue a name' }, nameRule]}>
            <Input disabled={editing} autoFocus={!editing} autoComplete="off" />
          </Form.Item>
        </Col>
        <Col xs={24} md={12}>
          <Form.Item
            label="Project"
            name="project"
            rules={[nameRule]}
            extra="Jobs of this project go to this queue; empty: the project named like the queue."
          >
            <AutoComplete
              options={projects.map((p) => ({ value: p }))}
              showSearch={{
                filterOption: (input, option) => String(option?.value ?? '').includes(input),
              }}
            />
          </Form.Item>
        </Col>
        <Col xs={24} md={12}>
          <Form.Item
            label="Cohort"
            name="cohort"
            rules={[nameRule]}
            extra="Queues of one cohort lend each other unused quota; empty: none."
          >
            <Input autoComplete="off" />
          </Form.Item>
        </Col>
        <Col xs={24} md={12}>
          <Form.Item
            label="Weight"
            name="weight"
            rules={[
              { required: true, message: 'Give a weight' },
              problemRule((v) =>
                v !== undefined && v !== null && !(Number(v) > 0 && Number(v) <= 1000)
                  ? 'a number above 0 and at most 1000'
                  : null,
              ),
            ]}
            extra="Fair-share weight within the cohort: twice the weight, twice the share."
          >
            <InputNumber min={0.001} max={1000} step={0.5} style={{ width: '100%' }} />
          </Form.Item>
        </Col>
      </Row>
      <Typography.Title level={5} style={{ marginTop: 0 }}>
        Quotas
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        A resource without a row is not limited. Amounts: GPUs and CPUs as numbers (8, 0.5), memory with a unit
        (512Gi). Empty limits mean no limit.
      </Typography.Paragraph>
      <Form.List name="quota">
        {(fields, { add, remove }) => (
          <>
            {fields.map((field, i) => (
              <Row gutter={8} key={field.key} align="top" data-testid={`quota-row-${i}`}>
                <Col xs={24} sm={12} md={6}>
                  <Form.Item
                    label="Resource"
                    name={[field.name, 'resource']}
                    rules={[
                      { required: true, message: 'Pick a resource' },
                      {
                        validator: async (_, v) => {
                          const res = String(v ?? '').trim();
                          if (!res) return;
                          if (!knownQuotaResource(res)) throw new Error(QUOTA_RESOURCE_TEXT);
                          if (quotaRows().some((r, j) => j !== field.name && r?.resource?.trim() === res)) {
                            throw new Error(`${res} has another row already`);
                          }
                        },
                      },
                    ]}
                  >
                    <AutoComplete options={resourceOptions} placeholder="gpu" />
                  </Form.Item>
                </Col>
                {AMOUNT_FIELDS.map((a) => (
                  <Col key={a.key} xs={12} sm={12} md={a.md}>
                    <Form.Item
                      required={a.required || undefined}
                      label={a.label}
                      name={[field.name, a.key]}
                      dependencies={[['quota', field.name, 'resource']]}
                      rules={[amountRule(() => rowResource(field.name), a.required)]}
                      tooltip={a.tooltip}
                    >
                      <Input autoComplete="off" placeholder={a.placeholder} />
                    </Form.Item>
                  </Col>
                ))}
                <Col xs={12} sm={12} md={4}>
                  <Form.Item label=" " colon={false}>
                    <Button
                      icon={<DeleteOutlined />}
                      onClick={() => remove(field.name)}
                      aria-label={`Remove quota row ${i + 1}`}
                    >
                      Remove
                    </Button>
                  </Form.Item>
                </Col>
              </Row>
            ))}
            <Button icon={<PlusOutlined />} onClick={() => add({ resource: '', nominal: '' })}>
              Add quota
            </Button>
          </>
        )}
      </Form.List>
    </FormModal>
  );
}
