import { memo, type ReactNode } from 'react';
import { Button, Col, Flex, Form, Input, InputNumber, Row, Select, Space, Tag, Typography, type FormInstance, type FormItemProps } from 'antd';
import { MinusCircleOutlined, PlusOutlined } from '@ant-design/icons';
import type { Queue } from '../api/types';
import { ButtonChoice, type Choice } from './ButtonChoice';
import { emptyFormValues, splitArgs, type SpecFormValues } from '../lib/spec';

// The server's rule for names (src/codec): letters, digits, '-', '_', '.'.
export const NAME_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const INITIAL = emptyFormValues();

interface Props {
  form: FormInstance<SpecFormValues>;
  projects: string[];
  queues: Queue[];
  gpuModels: string[];
  onValuesChange?: () => void;
}

const RUN_OPTIONS: Choice<SpecFormValues['run']>[] = [
  { value: 'command', label: 'Command' },
  { value: 'script', label: 'Script' },
];

// The form's control for `run`: buttons, as a radio named "Command" would
// share its name with the Command input below it.
function RunToggle({
  id,
  value,
  onChange,
}: {
  id?: string;
  value?: SpecFormValues['run'];
  onChange?: (v: SpecFormValues['run']) => void;
}) {
  return (
    <ButtonChoice
      id={id}
      role="radiogroup"
      label="Run"
      options={RUN_OPTIONS}
      value={value ?? 'command'}
      onChange={(v) => onChange?.(v)}
    />
  );
}

function ArgvPreview({ command }: { command: string | undefined }) {
  if (!command || command.trim() === '') return null;
  let argv: string[];
  try {
    argv = splitArgs(command);
  } catch {
    return null;
  }
  return (
    <div data-testid="argv-preview" aria-label="Arguments that will run" style={{ marginTop: -12, marginBottom: 16 }}>
      <Typography.Text type="secondary" style={{ marginRight: 8 }}>
        Runs as {argv.length} {argv.length === 1 ? 'argument' : 'arguments'}, without a shell:
      </Typography.Text>
      <Flex wrap gap={4} style={{ marginTop: 4 }}>
        {argv.map((a, i) => (
          <Tag key={i} style={{ fontFamily: 'ui-monospace, monospace', whiteSpace: 'pre-wrap', marginInlineEnd: 0 }}>
            {a === '' ? '""' : a}
          </Tag>
        ))}
      </Flex>
    </div>
  );
}

const FULL_WIDTH = { width: '100%' };

// A short field, three to a row (two on a phone).
function ShortField({
  label,
  name,
  extra,
  rules,
  children,
}: {
  label: string;
  name: keyof SpecFormValues;
  extra?: string;
  rules?: FormItemProps['rules'];
  children: ReactNode;
}) {
  return (
    <Col xs={12} sm={8}>
      <Form.Item label={label} name={name} extra={extra} rules={rules}>
        {children}
      </Form.Item>
    </Col>
  );
}

function SpecForm({ form, projects, queues, gpuModels, onValuesChange }: Props) {
  return (
    <Form<SpecFormValues>
      form={form}
      layout="vertical"
      name="spec"
      initialValues={INITIAL}
      onValuesChange={onValuesChange}
      scrollToFirstError
    >
      <Row gutter={16}>
        <Col xs={24} md={8}>
          <Form.Item
            label="Name"
            name="name"
            rules={[
              { required: true, message: 'Give the job a name' },
              { pattern: NAME_PATTERN, message: "Use 1-128 letters, digits, '-', '_' or '.'" },
            ]}
          >
            <Input placeholder="bert-base" autoComplete="off" />
          </Form.Item>
        </Col>
        <Col xs={24} md={8}>
          <Form.Item label="Project" name="project" rules={[{ required: true, message: 'Choose a project' }]}>
            <Select
              showSearch
              placeholder="Project"
              options={projects.map((p) => ({ value: p, label: p }))}
              notFoundContent="No project where you may submit"
            />
          </Form.Item>
        </Col>
        <Col xs={24} md={8}>
          <Form.Item label="Queue" name="queue" extra="Empty: the project's queue, else the queue named default">
            <Select
              allowClear
              showSearch
              placeholder="The project's queue"
              options={queues.map((q) => ({
                value: q.name,
                label: q.projects?.length ? `${q.name} (${q.projects.join(', ')})` : q.name,
              }))}
            />
          </Form.Item>
        </Col>
      </Row>

      <Form.Item label="Image" name="image" extra="Empty: the job runs as a process on the node. Otherwise a container image run with podman.">
        <Input placeholder="docker.io/pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime" autoComplete="off" />
      </Form.Item>

      <Form.Item label="Run" name="run">
        <RunToggle />
      </Form.Item>

      <Form.Item noStyle dependencies={['run']}>
        {({ getFieldValue }) =>
          getFieldValue('run') === 'script' ? (
            <Form.Item
              label="Script"
              name="script"
              extra="Shell text, run by /bin/sh -c."
              rules={[{ required: true, message: 'Write the script to run' }]}
            >
              <Input.TextArea
                autoSize={{ minRows: 4, maxRows: 20 }}
                spellCheck={false}
                style={{ fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace" }}
                placeholder="python3 train.py --lr 3e-4"
              />
            </Form.Item>
          ) : (
            <>
              <Form.Item
                label="Command"
                name="command"
                extra="Split into arguments like a shell line ('quotes' keep spaces), but run without a shell."
                rules={[
                  ({ getFieldValue: get }) => ({
                    validator: async (_, value: string | undefined) => {
                      if (!value || value.trim() === '') {
                        if (!get('image')) throw new Error('Give the command to run, or switch to Script');
                        return;
                      }
                      try {
                        splitArgs(value);
                      } catch (e) {
                        throw new Error(`Cannot split the command: ${(e as Error).message}`);
                      }
                    },
                  }),
                ]}
              >
                <Input placeholder="python3 train.py --lr 3e-4" autoComplete="off" spellCheck={false} />
              </Form.Item>
              <Form.Item noStyle dependencies={['command']}>
                {({ getFieldValue: get }) => <ArgvPreview command={get('command')} />}
              </Form.Item>
            </>
          )
        }
      </Form.Item>

      <Typography.Title level={5} style={{ marginTop: 0 }}>
        Resources per replica
      </Typography.Title>
      <Row gutter={16}>
        <ShortField
          label="GPUs"
          name="gpus"
          extra="Whole GPUs, or a share: 0.25, 0.5"
          rules={[
            {
              validator: async (_, v: number | null | undefined) => {
                if (v === null || v === undefined) return;
                if (v < 0) throw new Error('Cannot be negative');
                if (v > 1 && !Number.isInteger(v)) throw new Error('More than one GPU must be a whole number');
                if (Math.abs(Math.round(v * 100) - v * 100) > 1e-9) throw new Error('A share goes in steps of 0.01');
              },
            },
          ]}
        >
          <InputNumber min={0} step={1} style={FULL_WIDTH} placeholder="0" />
        </ShortField>
        <Col xs={24} sm={16}>
          <Form.Item label="GPU type" name="gpuType" extra="Any of these models; part of a name is enough">
            <Select
              mode="tags"
              allowClear
              placeholder="Any model"
              tokenSeparators={[',', ' ']}
              options={gpuModels.map((m) => ({ value: m, label: m }))}
            />
          </Form.Item>
        </Col>
        <ShortField label="CPUs" name="cpus" rules={[{ type: 'number', min: 0, message: 'Cannot be negative' }]}>
          <InputNumber min={0} step={1} style={FULL_WIDTH} placeholder="No limit" />
        </ShortField>
        <ShortField label="Memory" name="memory">
          <Input placeholder="32Gi" autoComplete="off" />
        </ShortField>
        <ShortField label="Replicas" name="replicas" extra="Each with its own RANK">
          <InputNumber min={1} precision={0} style={FULL_WIDTH} placeholder="1" />
        </ShortField>
      </Row>

      <Form.Item label="Environment" style={{ marginBottom: 8 }}>
        <Form.List name="env">
          {(fields, { add, remove }) => (
            <Space orientation="vertical" style={{ width: '100%' }} size={0}>
              {fields.map(({ key, name }) => (
                <Flex key={key} gap={8} align="baseline" wrap>
                  <Form.Item
                    name={[name, 'key']}
                    style={{ flex: '1 1 180px', marginBottom: 8 }}
                    rules={[
                      { required: true, message: 'Name the variable' },
                      { pattern: ENV_NAME, message: "Letters, digits and '_', not starting with a digit" },
                    ]}
                  >
                    <Input aria-label={`Variable ${name + 1}`} placeholder="SEED" autoComplete="off" />
                  </Form.Item>
                  <Form.Item name={[name, 'value']} style={{ flex: '2 1 240px', marginBottom: 8 }}>
                    <Input aria-label={`Value ${name + 1}`} placeholder="42" autoComplete="off" />
                  </Form.Item>
                  <Button
                    type="text"
                    aria-label={`Remove variable ${name + 1}`}
                    icon={<MinusCircleOutlined />}
                    onClick={() => remove(name)}
                  />
                </Flex>
              ))}
              <Button type="dashed" icon={<PlusOutlined />} onClick={() => add({ key: '', value: '' })}>
                Add variable
              </Button>
            </Space>
          )}
        </Form.List>
      </Form.Item>

      <Row gutter={16}>
        <Col xs={24}>
          <Form.Item label="Working directory" name="workdir" rules={[{ pattern: /^\//, message: 'Use an absolute path' }]}>
            <Input placeholder="/srv/project" autoComplete="off" />
          </Form.Item>
        </Col>
        <ShortField label="Priority" name="priority" extra="Higher runs first">
          <InputNumber precision={0} style={FULL_WIDTH} placeholder="0" />
        </ShortField>
        <ShortField label="Max runtime" name="maxRuntime" extra="For example 12h or 1h30m">
          <Input placeholder="12h" autoComplete="off" />
        </ShortField>
        <ShortField label="Retries" name="retries" extra="Times to retry a failure">
          <InputNumber min={0} precision={0} style={FULL_WIDTH} placeholder="0" />
        </ShortField>
      </Row>

      <Form.Item
        label="Notify webhook"
        name="webhook"
        extra="The server POSTs to this URL when the job finishes."
        rules={[{ pattern: /^https?:\/\/\S+$/, message: 'Use an http:// or https:// URL' }]}
      >
        <Input placeholder="https://hooks.example.org/x" autoComplete="off" />
      </Form.Item>
    </Form>
  );
}

// The page re-renders on every poll and hint change; the form need not.
export default memo(SpecForm);
