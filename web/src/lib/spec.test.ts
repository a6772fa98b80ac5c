import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../api/types';
import {
  emptyFormValues,
  formToSpec,
  joinArgs,
  specToForm,
  specToYaml,
  splitArgs,
  yamlLineOf,
  yamlToSpec,
} from './spec';
import { TEMPLATES } from './templates';

describe('splitArgs', () => {
  it('splits like a shell line without expanding anything', () => {
    expect(splitArgs('python3 train.py --lr 3e-4')).toEqual(['python3', 'train.py', '--lr', '3e-4']);
    expect(splitArgs(`echo 'a b' "c \\"d\\"" e\\ f $HOME`)).toEqual(['echo', 'a b', 'c "d"', 'e f', '$HOME']);
    expect(splitArgs(`x '' ""`)).toEqual(['x', '', '']);
    expect(splitArgs('  a\t b  ')).toEqual(['a', 'b']);
    expect(splitArgs('a\\\nb c')).toEqual(['ab', 'c']);
  });

  it('refuses unclosed quotes', () => {
    expect(() => splitArgs(`echo 'oops`)).toThrow(/single quote/);
    expect(() => splitArgs(`echo "oops`)).toThrow(/double quote/);
  });

  it('joinArgs is its inverse', () => {
    const cases = [
      ['python', 'train.py'],
      ['sh', '-c', 'echo "$X" && ls'],
      ['a b', '', "it's", 'back\\slash "q"', '--flag=1'],
    ];
    for (const argv of cases) expect(splitArgs(joinArgs(argv))).toEqual(argv);
  });
});

describe('form values and spec', () => {
  it('puts only what the user set into the spec', () => {
    const v = { ...emptyFormValues(), name: 'bert', command: 'python3 train.py', gpus: 0.25, env: [{ key: '', value: '' }] };
    expect(formToSpec(v)).toEqual({ name: 'bert', command: ['python3', 'train.py'], resources: { gpus: 0.25 } });
    expect(formToSpec(emptyFormValues())).toEqual({});
  });

  it('sends the script or the command, whichever Run says', () => {
    const v = { ...emptyFormValues(), command: 'a b', script: 'echo hi\n' };
    expect(formToSpec({ ...v, run: 'script' })).toEqual({ script: 'echo hi\n' });
    expect(formToSpec({ ...v, run: 'command' })).toEqual({ command: ['a', 'b'] });
  });

  it('round-trips a full spec, keeping fields the form has no input for', () => {
    const spec: JobSpec = {
      name: 'ddp',
      project: 'nlp',
      queue: 'nlp-batch',
      command: ['torchrun', '--nproc_per_node=4', 'train.py', 'two words'],
      image: 'localhost/pytorch:2',
      resources: { gpus: 4, gpu_type: ['A100', 'H100'], cpus: 8, memory: '32Gi' },
      replicas: 2,
      env: { SEED: '42', EMPTY: '' },
      workdir: '/srv/project',
      priority: 10,
      max_runtime: '12h',
      min_runtime: '30m',
      node_selector: { rack: 'r1' },
      same_label: 'rack',
      grace_period: 30,
      retries: { limit: 2, backoff: '30s' },
      notify: { webhook: 'https://hooks.example.org/x', on: ['failed'] },
    };
    expect(formToSpec(specToForm(spec))).toEqual(spec);
    const script: JobSpec = { name: 's', script: 'python3 a.py\npython3 b.py\n', max_runtime: 3600, resources: { memory: 1024 } };
    expect(formToSpec(specToForm(script))).toEqual(script);
  });

  it('reads API spellings: gpus as a string, memory in bytes', () => {
    const v = specToForm({ resources: { gpus: '0.25', memory: 1073741824 } });
    expect(v.gpus).toBe(0.25);
    expect(formToSpec(v)).toEqual({ resources: { gpus: 0.25, memory: 1073741824 } });
  });

  it('fills every template into the form and back', () => {
    for (const t of TEMPLATES) {
      const spec = formToSpec(specToForm(t.spec));
      const gpus = t.spec.resources?.gpus;
      expect(spec.resources?.gpus).toEqual(gpus === undefined ? undefined : Number(gpus));
      expect(spec.command ?? spec.script).toEqual(t.spec.command ?? t.spec.script);
    }
  });
});

describe('YAML', () => {
  it('round-trips spec -> YAML -> spec', () => {
    const spec: JobSpec = {
      name: 'bert',
      command: ['python3', 'train.py', '--lr', '3e-4'],
      resources: { gpus: 0.5, gpu_type: ['A100'], memory: '32Gi' },
      env: { SEED: '42' },
      script: 'line one\nline two\n',
      retries: { limit: 2 },
    };
    const text = specToYaml(spec);
    expect(text).toContain('command: [python3, train.py, --lr, "3e-4"]');
    expect(text).toContain('script: |');
    const back = yamlToSpec(text);
    expect(back).toEqual({ ok: true, spec });
  });

  it('reports parse errors with their line', () => {
    const r = yamlToSpec('name: x\ncommand: [a, b\nreplicas: 2\n');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0].line).toBeGreaterThanOrEqual(2);
    const list = yamlToSpec('- a\n- b\n');
    expect(list.ok).toBe(false);
  });

  it('finds the line of an API field', () => {
    const text = 'name: x\nresources:\n  gpus: 9\n  memory: 1Gi\nenv:\n  1X: y\n';
    expect(yamlLineOf(text, 'resources.gpus')).toBe(3);
    expect(yamlLineOf(text, 'env.1X')).toBe(6);
    expect(yamlLineOf(text, 'resources.gpu_type')).toBe(2);
    expect(yamlLineOf(text, 'queue')).toBeUndefined();
  });
});
