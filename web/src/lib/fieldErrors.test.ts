import { describe, expect, it } from 'vitest';
import { describeField, formPathFor } from './fieldErrors';

describe('formPathFor', () => {
  it('maps the API field paths to form names', () => {
    expect(formPathFor('resources.gpus')).toEqual(['gpus']);
    expect(formPathFor('resources.memory')).toEqual(['memory']);
    expect(formPathFor('resources.gpu_type')).toEqual(['gpuType']);
    expect(formPathFor('resources.gpu_type.1')).toEqual(['gpuType']);
    expect(formPathFor('replicas')).toEqual(['replicas']);
    expect(formPathFor('name')).toEqual(['name']);
    expect(formPathFor('project')).toEqual(['project']);
    expect(formPathFor('queue')).toEqual(['queue']);
    expect(formPathFor('notify.webhook')).toEqual(['webhook']);
    expect(formPathFor('max_runtime')).toEqual(['maxRuntime']);
    expect(formPathFor('retries.limit')).toEqual(['retries']);
  });

  it('puts command errors on the input in use', () => {
    expect(formPathFor('command', { run: 'command' })).toEqual(['command']);
    expect(formPathFor('command', { run: 'script' })).toEqual(['script']);
    expect(formPathFor('command.0', { run: 'command' })).toEqual(['command']);
  });

  it('finds the row of an environment variable', () => {
    const values = { env: [{ key: 'A', value: '1' }, { key: '1X', value: 'y' }] };
    expect(formPathFor('env.1X', values)).toEqual(['env', 1, 'key']);
    expect(formPathFor('env.B', values)).toBeNull();
  });

  it('gives null for fields without an input', () => {
    expect(formPathFor('grace_period')).toBeNull();
    expect(formPathFor('resources.gpu')).toBeNull();
    expect(formPathFor(undefined)).toBeNull();
    expect(describeField('grace_period', 'bad duration')).toBe('grace_period: bad duration');
  });
});
