import { useState, type ReactNode } from 'react';
import { Alert, App, Button, Flex, Form, Modal, Popconfirm, Table, Tag, Tooltip } from 'antd';
import type { FormInstance, TableColumnsType, TableProps } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { api, errorMessage } from '../../api/client';
import { usePoll, type Poll } from '../../api/usePoll';
import { placeError, type FieldPath, type Project, type User } from '../../lib/admin';

// Admin tables refresh at this pace so that changes made elsewhere (the CLI,
// another admin) show up without a reload.
export const ADMIN_POLL_MS = 5000;

// Shows an API error at its form field when the server named one the form
// has; otherwise returns the message for an alert above the form.
export function errorToForm(
  form: FormInstance,
  e: unknown,
  mapField?: (field: string) => FieldPath | null,
): string | null {
  const { field, message } = placeError(e, mapField);
  if (field) {
    form.setFields([field]);
    return null;
  }
  return message;
}

// A form rule from a check that returns what is wrong with a value, if anything.
export function problemRule(problem: (value: unknown) => string | null | undefined) {
  return {
    validator: async (_: unknown, value: unknown) => {
      const p = problem(value);
      if (p) throw new Error(p);
    },
  };
}

export function ErrorAlert({ message, onClose }: { message: string | null; onClose?: () => void }) {
  if (!message) return null;
  return (
    <Alert
      type="error"
      showIcon
      role="alert"
      title={message}
      closable={onClose ? { onClose, 'aria-label': 'Dismiss' } : false}
      style={{ marginBottom: 12 }}
    />
  );
}

export function YesNo({ value, yes = 'yes', no = 'no', color = 'blue' }: { value: boolean; yes?: string; no?: string; color?: string }) {
  return value ? <Tag color={color}>{yes}</Tag> : <span>{no}</span>;
}

export function useUsers() {
  return usePoll(
    (signal) => api<{ users: User[] }>('/api/v1/users', { signal }).then((r) => r.users),
    ADMIN_POLL_MS,
    [],
  );
}

export function useProjects() {
  return usePoll(
    (signal) => api<{ projects: Project[] }>('/api/v1/projects', { signal }).then((r) => r.projects),
    ADMIN_POLL_MS,
    [],
  );
}

export function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name.localeCompare(b.name);
}

export function enc(s: string): string {
  return encodeURIComponent(s);
}

// "3 users" once the list has loaded, nothing before.
export function countOf(list: unknown[] | null | undefined, noun: string): string {
  return list ? `${list.length} ${noun}` : '';
}

// The row above a tab's table: something on the left, the create button on the right.
export function TabToolbar({ left, newLabel, onNew }: { left: ReactNode; newLabel: string; onNew: () => void }) {
  return (
    <Flex justify="space-between" align="center" wrap gap={8} style={{ marginBottom: 12 }}>
      {left}
      <Button type="primary" icon={<PlusOutlined />} onClick={onNew}>
        {newLabel}
      </Button>
    </Flex>
  );
}

// Every admin table: 50 rows a page, scrolling sideways where the screen is narrow.
export function AdminTable<T extends object>(props: TableProps<T>) {
  return <Table<T> size="middle" pagination={{ pageSize: 50, hideOnSinglePage: true }} scroll={{ x: true }} {...props} />;
}

// After a change: says what was done and reloads the list it changed.
export function useReport(refresh: () => void) {
  const { message } = App.useApp();
  return (done: string) => {
    message.success(done);
    refresh();
  };
}

// An action on one table row (delete, revoke, a role change): which row is
// busy, and the error of the last one, shown above the table until dismissed.
export function useRowAction<K>() {
  const [busy, setBusy] = useState<K | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async (key: K, action: () => Promise<void>) => {
    setBusy(key);
    setError(null);
    try {
      await action();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(null);
    }
  };
  return { busy, error, clearError: () => setError(null), run };
}

type ActionError = Pick<ReturnType<typeof useRowAction<unknown>>, 'error' | 'clearError'>;

// The alerts above a table: the list failed to load, or a row action failed.
export function TableAlerts({
  loadError,
  action,
}: {
  loadError: string | null;
  action: ActionError;
}) {
  return (
    <>
      <ErrorAlert message={loadError} />
      <ErrorAlert message={action.error} onClose={action.clearError} />
    </>
  );
}

// A polled list of named things (users, projects, queues) as a table sorted by
// name; a failed poll is shown only while there is nothing to show instead.
export function NamedListTable<T extends { name: string }>({
  list,
  action,
  columns,
}: {
  list: Poll<T[]>;
  action: ActionError;
  columns: TableColumnsType<T>;
}) {
  return (
    <>
      <TableAlerts loadError={list.error && !list.data ? list.error : null} action={action} />
      <AdminTable<T>
        rowKey="name"
        columns={columns}
        dataSource={[...(list.data ?? [])].sort(byName)}
        loading={list.loading && !list.data}
      />
    </>
  );
}

// A small danger button that asks first.
export function ConfirmButton({
  title,
  description,
  okText,
  onConfirm,
  loading,
  disabled,
  tooltip,
}: {
  title: string;
  description: string;
  okText: string;
  onConfirm: () => void;
  loading?: boolean;
  disabled?: boolean;
  tooltip?: string;
}) {
  const confirm = (
    <Popconfirm
      title={title}
      description={description}
      okText={okText}
      okButtonProps={{ danger: true }}
      onConfirm={onConfirm}
      disabled={disabled}
    >
      <Button size="small" danger loading={loading} disabled={disabled}>
        {okText}
      </Button>
    </Popconfirm>
  );
  return tooltip ? <Tooltip title={tooltip}>{confirm}</Tooltip> : confirm;
}

// Sends a form's values; an API error lands at the field it names, else in
// `error` for an alert above the form.
export function useFormSubmit<V>(
  form: FormInstance<V>,
  submit: (values: V) => Promise<void>,
  mapField?: (field: string) => FieldPath | null,
) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const onFinish = async (values: V) => {
    setBusy(true);
    setError(null);
    try {
      await submit(values);
    } catch (e) {
      setError(errorToForm(form, e, mapField));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, onFinish };
}

export interface FormModalProps<V> {
  open: boolean;
  title: ReactNode;
  okText: string;
  // The form's name, which prefixes the ids of its inputs.
  name: string;
  onCancel: () => void;
  // Throws the API error, which is shown at its field or above the form.
  submit: (values: V, form: FormInstance<V>) => Promise<void>;
  mapField?: (field: string) => FieldPath | null;
  initialValues?: Partial<V>;
  width?: number;
  // For forms whose fields read other fields; otherwise the modal makes its own.
  form?: FormInstance<V>;
  children: ReactNode;
}

// A dialog holding one form, submitted by its OK button (and Enter).
export function FormModal<V>({
  open,
  title,
  okText,
  name,
  onCancel,
  submit,
  mapField,
  initialValues,
  width,
  form: given,
  children,
}: FormModalProps<V>) {
  const [own] = Form.useForm<V>();
  const form = given ?? own;
  const { busy, error, setError, onFinish } = useFormSubmit(form, (v: V) => submit(v, form), mapField);
  return (
    <Modal
      open={open}
      title={title}
      okText={okText}
      confirmLoading={busy}
      onCancel={() => {
        setError(null);
        onCancel();
      }}
      destroyOnHidden
      width={width}
      okButtonProps={{ htmlType: 'submit' }}
      modalRender={(dom) => (
        <Form form={form} layout="vertical" name={name} onFinish={onFinish} initialValues={initialValues} clearOnDestroy>
          {dom}
        </Form>
      )}
    >
      <ErrorAlert message={error} />
      {children}
    </Modal>
  );
}
