import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router-dom';
import { App, Alert, Button, Card, Col, Flex, Form, Result, Row, Select, Space, Tabs, Typography } from 'antd';
import { ApiError, api, errorMessage } from '../api/client';
import { usePoll } from '../api/usePoll';
import type { Job, NodeInfo, Queue } from '../api/types';
import { useAuth } from '../auth/AuthContext';
import QuotaHint from '../components/QuotaHint';
import SpecForm from '../components/SpecForm';
import YamlTab from '../components/YamlTab';
import { describeField, formPathFor } from '../lib/fieldErrors';
import { canSubmit, submitProjects } from '../lib/roles';
import {
  FormValueError,
  formToSpec,
  specToForm,
  specToYaml,
  yamlLineOf,
  yamlToSpec,
  type SpecFormValues,
  type YamlProblem,
} from '../lib/spec';
import { TEMPLATES, templateByKey } from '../lib/templates';

interface ProjectList {
  projects: { name: string }[];
}

// crypto.randomUUID exists only in secure contexts; the fallback keeps the
// key unguessable elsewhere.
function newIdempotencyKey(): string {
  if (typeof crypto !== 'undefined' && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

type TabKey = 'form' | 'yaml';
const NO_QUEUES: Queue[] = [];

export default function SubmitPage() {
  const { me } = useAuth();
  const navigate = useNavigate();
  const { message } = App.useApp();
  const [search] = useSearchParams();
  const from = search.get('from');
  const [form] = Form.useForm<SpecFormValues>();

  const [tab, setTab] = useState<TabKey>('form');
  const [yamlText, setYamlText] = useState('');
  const [yamlProblems, setYamlProblems] = useState<YamlProblem[]>([]);
  const [alerts, setAlerts] = useState<string[]>([]);
  const [sending, setSending] = useState(false);
  const sendingRef = useRef(false);
  const [template, setTemplate] = useState<string | undefined>(from ? undefined : 'blank');
  const [prefill, setPrefill] = useState<{ job?: Job; error?: string } | null>(null);
  // One key per filling of the form: a double click or a resend after a lost
  // reply repeats it (the server answers with the job stored the first
  // time); any edit makes a new one, since it is then a different request.
  const keyRef = useRef(newIdempotencyKey());
  const touched = useCallback(() => {
    keyRef.current = newIdempotencyKey();
  }, []);

  const allowed = canSubmit(me);
  const projectsPoll = usePoll(
    (signal) => api<ProjectList>('/api/v1/projects', { signal }).then((r) => r.projects.map((p) => p.name)),
    0,
    [],
  );
  const queuesPoll = usePoll((signal) => api<{ queues: Queue[] }>('/api/v1/queues', { signal }), 5000, []);
  const nodesPoll = usePoll((signal) => api<{ nodes: NodeInfo[] }>('/api/v1/nodes', { signal }), 5000, []);
  const queues = queuesPoll.data?.queues;
  const nodes = nodesPoll.data?.nodes;

  const projects = useMemo(() => submitProjects(me, projectsPoll.data ?? []), [me, projectsPoll.data]);
  const projectsKnown = !projectsPoll.loading;
  const gpuModels = useMemo(() => {
    const s = new Set<string>();
    for (const n of nodes ?? []) for (const g of n.gpus ?? []) s.add(g.model);
    return Array.from(s).sort();
  }, [nodes]);

  const fill = useCallback(
    (values: SpecFormValues) => {
      form.resetFields();
      form.setFieldsValue(values);
      touched();
    },
    [form, touched],
  );

  // The first project one may submit to, unless the form has one already.
  useEffect(() => {
    if (!projectsKnown || projects.length === 0 || form.getFieldValue('project')) return;
    const limit = me?.auth?.project;
    const own = me?.projects.map((p) => p.project).find((p) => projects.includes(p));
    const pick = (limit && projects.includes(limit) ? limit : undefined) ?? own ?? projects[0];
    form.setFieldValue('project', pick);
  }, [projectsKnown, projects, form, me]);

  // "Clone and edit": the form starts from another job's spec.
  useEffect(() => {
    if (!from) return;
    const controller = new AbortController();
    api<Job>(`/api/v1/jobs/${encodeURIComponent(from)}`, { signal: controller.signal })
      .then((job) => {
        fill(specToForm(job.spec ?? {}));
        setTab('form');
        setPrefill({ job });
      })
      .catch((e) => {
        if (!(e instanceof DOMException && e.name === 'AbortError')) setPrefill({ error: errorMessage(e) });
      });
    return () => controller.abort();
  }, [from, fill]);

  const applyTemplate = (key: string) => {
    const t = templateByKey(key);
    if (!t) return;
    const keep = { project: form.getFieldValue('project'), queue: form.getFieldValue('queue') };
    const values = { ...specToForm(t.spec), ...keep };
    fill(values);
    setTemplate(key);
    setAlerts([]);
    if (tab === 'yaml') {
      setYamlText(specToYaml(formToSpec(values)));
      setYamlProblems([]);
    }
  };

  const switchTab = (key: string) => {
    if (key === tab) return;
    setAlerts([]);
    if (key === 'yaml') {
      try {
        setYamlText(specToYaml(formToSpec(form.getFieldsValue(true))));
      } catch (e) {
        if (e instanceof FormValueError) {
          form.setFields([{ name: e.field, errors: [e.message] }]);
          return;
        }
        throw e;
      }
      setYamlProblems([]);
      setTab('yaml');
      return;
    }
    const parsed = yamlToSpec(yamlText);
    if (!parsed.ok) {
      // Stay on the text so nothing typed is lost; the problems say where.
      setYamlProblems(parsed.problems);
      return;
    }
    fill(specToForm(parsed.spec));
    setYamlProblems([]);
    setTab('form');
  };

  // The quota hint follows the tab being edited.
  // Watched one by one, so typing a name does not re-render the page.
  const wProject = Form.useWatch('project', form);
  const wQueue = Form.useWatch('queue', form);
  const wGpus = Form.useWatch('gpus', form);
  const wGpuType = Form.useWatch('gpuType', form);
  const wReplicas = Form.useWatch('replicas', form);
  const watched: Partial<SpecFormValues> = {
    project: wProject,
    queue: wQueue,
    gpus: wGpus,
    gpuType: wGpuType,
    replicas: wReplicas,
  };
  const yamlValues = useMemo(() => {
    if (tab !== 'yaml') return undefined;
    const parsed = yamlToSpec(yamlText);
    return parsed.ok ? specToForm(parsed.spec) : undefined;
  }, [tab, yamlText]);
  const hintValues: Partial<SpecFormValues> = (tab === 'yaml' ? yamlValues : watched) ?? {};

  const submit = async () => {
    if (sendingRef.current) return;
    setAlerts([]);
    let request: Parameters<typeof api>[1];
    let values: SpecFormValues | undefined;
    if (tab === 'yaml') {
      const parsed = yamlToSpec(yamlText);
      if (!parsed.ok) {
        setYamlProblems(parsed.problems);
        return;
      }
      setYamlProblems([]);
      request = { method: 'POST', rawBody: yamlText, contentType: 'application/yaml' };
    } else {
      try {
        await form.validateFields();
      } catch {
        return;
      }
      values = form.getFieldsValue(true) as SpecFormValues;
      try {
        request = { method: 'POST', body: formToSpec(values) };
      } catch (e) {
        if (e instanceof FormValueError) {
          form.setFields([{ name: e.field, errors: [e.message] }]);
          return;
        }
        throw e;
      }
    }
    sendingRef.current = true;
    setSending(true);
    try {
      const job = await api<Job>('/api/v1/jobs', {
        ...request,
        headers: { 'Idempotency-Key': keyRef.current },
      });
      message.success(`Submitted job ${job.id}`);
      navigate(`/jobs/${job.id}`);
    } catch (e) {
      showError(e, values);
    } finally {
      sendingRef.current = false;
      setSending(false);
    }
  };

  const showError = (e: unknown, values: SpecFormValues | undefined) => {
    if (!(e instanceof ApiError)) {
      setAlerts([errorMessage(e)]);
      return;
    }
    let field = e.field;
    // "no such project" comes without a field but is about the project.
    if (!field && e.status === 404 && /project/i.test(e.message)) field = 'project';
    if (tab === 'yaml') {
      const line = field ? yamlLineOf(yamlText, field) : undefined;
      setAlerts([`${line ? `Line ${line}: ` : ''}${describeField(field, e.message)}`]);
      return;
    }
    const path = formPathFor(field, values);
    if (path) {
      form.setFields([{ name: path, errors: [e.message] }]);
      form.scrollToField(path, { block: 'center' });
    } else {
      setAlerts([describeField(field, e.message)]);
    }
  };

  if (!allowed || (projectsKnown && projects.length === 0)) {
    return (
      <Result
        status="info"
        title="You have no project where you may submit jobs"
        subTitle="Submitting needs the engineer or admin role in a project. A project admin can give you one."
        extra={<Link to="/jobs">See the jobs you can read</Link>}
      />
    );
  }

  const formTab = (
    <SpecForm form={form} projects={projects} queues={queues ?? NO_QUEUES} gpuModels={gpuModels} onValuesChange={touched} />
  );
  const yamlTab = (
    <YamlTab
      value={yamlText}
      problems={yamlProblems}
      onChange={(text) => {
        setYamlText(text);
        touched();
      }}
    />
  );

  return (
    <div>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Submit a job
      </Typography.Title>
      {prefill?.job && (
        <Alert
          type="info"
          showIcon
          style={{ marginBottom: 16 }}
          title={
            <span>
              Filled in from <Link to={`/jobs/${prefill.job.id}`}>job {prefill.job.id}</Link> ({prefill.job.name}).
              Change what you need, then submit.
            </span>
          }
        />
      )}
      {prefill?.error && (
        <Alert type="error" showIcon style={{ marginBottom: 16 }} title={`Could not load job ${from}: ${prefill.error}`} />
      )}
      <Row gutter={[24, 16]}>
        <Col xs={24} xl={16} xxl={15}>
          <Card>
            <Form layout="vertical" component="div" style={{ maxWidth: 520 }}>
              <Form.Item label="Template" htmlFor="submit-template">
                <Select
                  id="submit-template"
                  value={template}
                  placeholder="Choose a template"
                  onChange={applyTemplate}
                  // A node, not a string, as the label: the listbox then does not repeat
                  // "... 4 GPUs" as an aria-label, which finding "GPUs" by label would hit.
                  options={TEMPLATES.map((t) => ({ value: t.key, label: <span>{t.label}</span> }))}
                />
              </Form.Item>
            </Form>
            {alerts.length > 0 && (
              <Alert
                type="error"
                showIcon
                closable={{ onClose: () => setAlerts([]) }}
                style={{ marginBottom: 16 }}
                data-testid="submit-error"
                title={alerts.length === 1 ? alerts[0] : 'The server refused the job'}
                description={
                  alerts.length > 1 ? (
                    <ul style={{ margin: 0, paddingLeft: 18 }}>
                      {alerts.map((a) => (
                        <li key={a}>{a}</li>
                      ))}
                    </ul>
                  ) : undefined
                }
              />
            )}
            <Tabs
              activeKey={tab}
              onChange={switchTab}
              items={[
                { key: 'form', label: 'Form', children: formTab },
                { key: 'yaml', label: 'YAML', children: yamlTab },
              ]}
            />
            <Flex gap={8} align="center" wrap style={{ marginTop: 8 }}>
              <Button type="primary" size="large" onClick={submit} loading={sending} disabled={sending}>
                Submit
              </Button>
              <Typography.Text type="secondary">
                {tab === 'yaml' ? 'Sends the YAML text as it is.' : 'Sends only the fields you filled in; the server fills in the rest.'}
              </Typography.Text>
            </Flex>
          </Card>
        </Col>
        <Col xs={24} xl={8} xxl={9}>
          <Card title="Capacity" size="small">
            <Space orientation="vertical" style={{ width: '100%' }}>
              <QuotaHint
                queues={queues}
                nodes={nodes}
                project={hintValues.project}
                queue={hintValues.queue}
                gpus={hintValues.gpus}
                gpuType={hintValues.gpuType}
                replicas={hintValues.replicas}
              />
              {(queuesPoll.error || nodesPoll.error) && (
                <Typography.Text type="secondary">
                  Capacity unavailable: {queuesPoll.error ?? nodesPoll.error}
                </Typography.Text>
              )}
            </Space>
          </Card>
        </Col>
      </Row>
    </div>
  );
}

