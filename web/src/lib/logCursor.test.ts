import { describe, expect, it } from 'vitest';
import { appendCapped, capText, logDownloadUrl, logUrl, parseLogHeaders, searchLog } from './logCursor';

const headers = (h: Record<string, string>) => new Headers(h);

describe('parseLogHeaders', () => {
  it('reads the cursor, attempt and done flag', () => {
    expect(
      parseLogHeaders(headers({ 'X-Log-Cursor': '2:12:345', 'X-Log-Attempt': '2', 'X-Log-Done': 'true', 'X-Log-Gap': 'true' })),
    ).toEqual({ cursor: '2:12:345', attempt: 2, done: true, gap: true });
  });

  it('says there is no cursor when the server does not do cursor reads', () => {
    expect(parseLogHeaders(headers({}))).toEqual({ cursor: null, attempt: null, done: false, gap: false });
    expect(parseLogHeaders(headers({ 'X-Log-Cursor': ' ', 'X-Log-Done': 'false', 'X-Log-Attempt': 'x' }))).toEqual({
      cursor: null,
      attempt: null,
      done: false,
      gap: false,
    });
  });
});

describe('logUrl', () => {
  it('asks for the tail first and continues from the cursor after', () => {
    expect(logUrl(7, { attempt: 2, replica: 1, tail: 2000 })).toBe(
      '/api/v1/jobs/7/logs?attempt=2&replica=1&cursor=start&tail=2000',
    );
    expect(logUrl(7, { attempt: 2, replica: 0, cursor: 'a:b', tail: 2000 })).toBe(
      '/api/v1/jobs/7/logs?attempt=2&replica=0&cursor=a%3Ab',
    );
    expect(logDownloadUrl(7, 3, 1)).toBe('/api/v1/jobs/7/logs?attempt=3&replica=1');
  });
});

describe('appendCapped', () => {
  it('appends while under the cap', () => {
    const a = appendCapped({ text: 'one\n', truncated: false }, 'two\n', 100);
    expect(a).toEqual({ text: 'one\ntwo\n', truncated: false });
  });

  it('drops the oldest text at a line start once over the cap', () => {
    const a = appendCapped({ text: 'aaaa\nbbbb\n', truncated: false }, 'cccc\n', 12);
    expect(a.truncated).toBe(true);
    expect(a.text).toBe('bbbb\ncccc\n');
    expect(capText('aa\nbb\ncc\n', 6).text).toBe('bb\ncc\n');
    expect(a.text.length).toBeLessThanOrEqual(12);
    // Once dropped, it stays marked even when later chunks fit.
    expect(appendCapped(a, 'd\n', 12).truncated).toBe(true);
  });

  it('keeps a cut line when one line alone is over the cap', () => {
    const a = capText('x'.repeat(30), 10);
    expect(a).toEqual({ text: 'x'.repeat(10), truncated: true });
  });

  it('ignores empty chunks', () => {
    const prev = { text: 'a\n', truncated: false };
    expect(appendCapped(prev, '')).toBe(prev);
  });
});

describe('searchLog', () => {
  const text = 'epoch 1 loss 0.5\nsaving\nepoch 2 LOSS 0.4 loss\n';

  it('counts matches case-insensitively and splits lines for highlighting', () => {
    const r = searchLog(text, 'loss', true);
    expect(r.matches).toBe(3);
    expect(r.matchingLines).toBe(2);
    expect(r.lines).toHaveLength(2);
    expect(r.lines[1].parts).toEqual([
      { text: 'epoch 2 ', match: false },
      { text: 'LOSS', match: true },
      { text: ' 0.4 ', match: false },
      { text: 'loss', match: true },
    ]);
  });

  it('keeps the other lines when asked and treats the needle as plain text', () => {
    expect(searchLog(text, 'loss', false).lines).toHaveLength(3);
    expect(searchLog('a.b\naxb\n', 'a.b', true).matches).toBe(1);
  });
});
