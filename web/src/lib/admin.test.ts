import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import type { Queue } from '../api/types';
import { queueToEditForm } from './queues';
import {
  amountProblem,
  placeError,
  queueFieldPath,
  queueFormFromBody,
  queuePutBodyFromForm,
  tokenStatus,
  validExpiresIn,
  validName,
  type ApiToken,
} from './admin';

describe('names', () => {
  it('follows the server rule', () => {
    expect(validName('nlp-team_2.a')).toBe(true);
    expect(validName('a'.repeat(64))).toBe(true);
    expect(validName('a'.repeat(65))).toBe(false);
    expect(validName('')).toBe(false);
    expect(validName('Bob')).toBe(false);
    expect(validName('has space')).toBe(false);
  });

  it('reads expires_in as the server does', () => {
    expect(validExpiresIn('30d')).toBe(true);
    expect(validExpiresIn('3600')).toBe(true);
    expect(validExpiresIn('366d')).toBe(true);
    expect(validExpiresIn('367d')).toBe(false);
    expect(validExpiresIn('0h')).toBe(false);
    expect(validExpiresIn('1w')).toBe(false);
  });
});

describe('queue editor conversion', () => {
  // The GET shape as the server writes it: amounts as text, null for none.
  const queue: Queue = {
    name: 'nlp',
    cohort: 'research',
    weight: 2,
    projects: ['nlp'],
    resources: [
      { name: 'gpu', nominal: '8' as unknown as number, borrowing_limit: '4' as unknown as number, lending_limit: null, used: 3 },
      { name: 'memory', nominal: '512Gi' as unknown as number, borrowing_limit: null, lending_limit: null, used: 0 },
      { name: 'cpu', nominal: null, borrowing_limit: null, lending_limit: null, used: 2 },
    ],
    pending: 0,
    running: 1,
  };

  it('round-trips a queue through the form unchanged', () => {
    const form = queueFormFromBody('nlp', queueToEditForm(queue));
    expect(form.quota).toEqual([
      { resource: 'gpu', nominal: '8', borrowing_limit: '4', lending_limit: undefined },
      { resource: 'memory', nominal: '512Gi', borrowing_limit: undefined, lending_limit: undefined },
    ]);
    expect(queuePutBodyFromForm(form)).toEqual({
      project: 'nlp',
      cohort: 'research',
      weight: 2,
      quota: { gpu: { nominal: 8, borrowing_limit: 4 }, memory: { nominal: '512Gi' } },
    });
  });

  it('builds the PUT body from edited rows', () => {
    const body = queuePutBodyFromForm({
      name: 'vision',
      project: '',
      cohort: ' ',
      weight: 1.5,
      quota: [
        { resource: 'gpu:A100', nominal: ' 0.5 ', borrowing_limit: '', lending_limit: '0.25' },
        { resource: 'cpu', nominal: '250m' },
      ],
    });
    expect(body).toEqual({
      project: 'vision',
      weight: 1.5,
      quota: { 'gpu:A100': { nominal: 0.5, lending_limit: 0.25 }, cpu: { nominal: '250m' } },
    });
  });

  it('puts server errors on the row of their resource', () => {
    const rows = [
      { resource: 'gpu', nominal: '8' },
      { resource: 'gpu:A100', nominal: '4' },
    ];
    expect(queueFieldPath('quota.gpu:A100.lending_limit', rows)).toEqual(['quota', 1, 'lending_limit']);
    expect(queueFieldPath('quota.gpu', rows)).toEqual(['quota', 0, 'resource']);
    expect(queueFieldPath('weight', rows)).toEqual(['weight']);
    expect(queueFieldPath('quota.memory.nominal', rows)).toBeNull();
  });

  it('checks amounts by resource', () => {
    expect(amountProblem('gpu', '8')).toBeNull();
    expect(amountProblem('gpu', '0.125')).toBeNull();
    expect(amountProblem('gpu', '0.1255')).not.toBeNull();
    expect(amountProblem('memory', '512Gi')).toBeNull();
    expect(amountProblem('memory', '1.5Gi')).not.toBeNull();
  });
});

describe('errors and tokens', () => {
  it('places an error with a field at the field, others above the form', () => {
    const e = new ApiError(400, 'invalid_argument', 'use 1-64 lower-case letters', 'name');
    expect(placeError(e).field).toEqual({ name: ['name'], errors: ['use 1-64 lower-case letters'] });
    expect(placeError(new ApiError(409, 'already_exists', 'user bob already exists'))).toEqual({
      field: null,
      message: 'user bob already exists',
    });
  });

  it('names a token state', () => {
    const t: ApiToken = {
      id: 1, user: 'bob', name: 'ci', prefix: 'abc', project: null, created_at: 1,
      expires_at: 1000, revoked_at: null, last_used_at: null, live: false,
    };
    expect(tokenStatus(t, 2000)).toBe('expired');
    expect(tokenStatus({ ...t, revoked_at: 500 }, 2000)).toBe('revoked');
    expect(tokenStatus({ ...t, live: true, expires_at: null }, 2000)).toBe('live');
  });
});
