import { Fragment, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { Alert, Checkbox, Flex, Input, Select, Switch, Typography } from 'antd';
import { DownloadOutlined, SearchOutlined } from '@ant-design/icons';
import { apiFetch } from '../api/client';
import { usePoll } from '../api/usePoll';
import {
  appendCapped,
  capText,
  FIRST_TAIL_LINES,
  logDownloadUrl,
  logUrl,
  parseLogHeaders,
  searchLog,
  type CappedText,
} from '../lib/logCursor';

export interface LogViewerProps {
  jobId: number;
  // The job's attempt count: the latest attempt is shown unless one is picked.
  attempts: number;
  replicas: number;
  // True when the job is over, so the latest attempt's log cannot grow
  // (used only where the server does not say so itself).
  jobOver: boolean;
}

const EMPTY: CappedText = { text: '', truncated: false };

function countLines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

// A labelled picker of a number (attempt, replica) in the log's toolbar.
function NumberPick({
  label,
  jobId,
  width,
  value,
  options,
  onChange,
}: {
  label: string;
  jobId: number;
  width: number;
  value: number;
  options: { value: number; label: string }[];
  onChange: (value: number) => void;
}) {
  const id = `log-${label.toLowerCase()}-${jobId}`;
  return (
    <Flex align="center" gap={6}>
      <label htmlFor={id}>{label}</label>
      <Select id={id} style={{ width }} value={value} options={options} onChange={onChange} />
    </Flex>
  );
}

export function LogViewer({ jobId, attempts, replicas, jobOver }: LogViewerProps) {
  const [pinned, setPinned] = useState<number | null>(null);
  const [replica, setReplica] = useState(0);
  const [follow, setFollow] = useState(true);
  const [needle, setNeedle] = useState('');
  const [onlyMatching, setOnlyMatching] = useState(true);
  const [log, setLog] = useState<CappedText>(EMPTY);
  const [mode, setMode] = useState<'cursor' | 'tail' | null>(null);
  const [done, setDone] = useState(false);
  const [tailCut, setTailCut] = useState(false);
  const [loaded, setLoaded] = useState(false);
  const [gap, setGap] = useState(false);

  const attempt = pinned && pinned <= attempts ? pinned : attempts;
  const key = `${jobId}:${attempt}:${replica}`;
  const keyRef = useRef(key);
  const cursorRef = useRef<string | null>(null);
  const doneRef = useRef(false);
  const overRef = useRef(false);
  overRef.current = attempt < attempts || jobOver;
  const box = useRef<HTMLPreElement>(null);

  // Another attempt or replica is another file: start over.
  useEffect(() => {
    keyRef.current = key;
    cursorRef.current = null;
    doneRef.current = false;
    setLog(EMPTY);
    setMode(null);
    setDone(false);
    setTailCut(false);
    setLoaded(false);
    setGap(false);
  }, [key]);

  // Cursor reads return only new bytes, so they are cheap to repeat often and
  // go on while the reader scrolls back; re-reading the tail replaces the
  // text, so it waits while the reader is not following.
  const interval = attempt === 0 || done ? 0 : mode === 'tail' ? (follow ? 2000 : 0) : 1000;

  const poll = usePoll(
    async (signal) => {
      if (attempt === 0 || doneRef.current) return null;
      const forKey = key;
      const final = overRef.current;
      const first = cursorRef.current === null;
      const res = await apiFetch(
        logUrl(jobId, { attempt, replica, cursor: cursorRef.current, tail: first ? FIRST_TAIL_LINES : undefined }),
        { signal, headers: { Accept: 'text/plain' } },
      );
      const text = await res.text();
      if (keyRef.current !== forKey) return null;
      const info = parseLogHeaders(res.headers);
      if (info.cursor) {
        if (first) {
          setLog(capText(text));
          setTailCut(countLines(text) >= FIRST_TAIL_LINES);
        } else {
          setLog((prev) => appendCapped(prev, text));
        }
        cursorRef.current = info.cursor;
        if (info.gap) setGap(true);
        setMode('cursor');
        if (info.done) {
          doneRef.current = true;
          setDone(true);
        }
      } else {
        setLog(capText(text));
        setTailCut(countLines(text) >= FIRST_TAIL_LINES);
        setMode('tail');
        if (final) {
          doneRef.current = true;
          setDone(true);
        }
      }
      setLoaded(true);
      return null;
    },
    interval,
    [key],
  );

  // A job that just ended gets one more read in tail mode, to show its last lines.
  useEffect(() => {
    if (jobOver && mode === 'tail' && !doneRef.current) poll.refresh();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [jobOver]);

  const result = useMemo(() => (needle ? searchLog(log.text, needle, onlyMatching) : null), [log.text, needle, onlyMatching]);

  useLayoutEffect(() => {
    const el = box.current;
    if (follow && el && !needle) el.scrollTop = el.scrollHeight;
  }, [log.text, follow, needle]);

  // Scrolling up to read stops following, as in a terminal.
  const onScroll = () => {
    const el = box.current;
    if (!el || !follow) return;
    if (el.scrollHeight - el.scrollTop - el.clientHeight > 40) setFollow(false);
  };

  if (attempts === 0) {
    return (
      <Typography.Text type="secondary" data-testid="log-empty">
        No logs yet: the job has not started.
      </Typography.Text>
    );
  }

  const attemptOptions = Array.from({ length: attempts }, (_, i) => attempts - i).map((n) => ({
    value: n,
    label: n === attempts ? `${n} (latest)` : String(n),
  }));
  const pickAttempt = (v: number) => setPinned(v === attempts ? null : v);
  const replicaOptions = Array.from({ length: replicas }, (_, i) => ({ value: i, label: String(i) }));

  return (
    <div>
      <Flex wrap gap={12} align="center" style={{ marginBottom: 8 }}>
        {attempts > 1 && (
          <NumberPick label="Attempt" jobId={jobId} width={120} value={attempt} options={attemptOptions} onChange={pickAttempt} />
        )}
        {replicas > 1 && (
          <NumberPick label="Replica" jobId={jobId} width={100} value={replica} options={replicaOptions} onChange={setReplica} />
        )}
        <Flex align="center" gap={6}>
          <Switch id={`log-follow-${jobId}`} checked={follow} onChange={setFollow} size="small" />
          <label htmlFor={`log-follow-${jobId}`}>Follow</label>
        </Flex>
        <Input
          type="search"
          prefix={<SearchOutlined aria-hidden />}
          aria-label="Search the log"
          placeholder="Search the log"
          allowClear
          style={{ width: 240 }}
          value={needle}
          onChange={(e) => setNeedle(e.target.value)}
        />
        {needle && (
          <Checkbox checked={onlyMatching} onChange={(e) => setOnlyMatching(e.target.checked)}>
            Only matching lines
          </Checkbox>
        )}
        {needle && (
          <Typography.Text type="secondary" aria-live="polite" data-testid="log-match-count">
            {result?.matches ?? 0} match{result?.matches === 1 ? '' : 'es'}
            {result && result.matches > 0 ? ` in ${result.matchingLines} line${result.matchingLines === 1 ? '' : 's'}` : ''}
          </Typography.Text>
        )}
        <div style={{ flex: 1 }} />
        <Typography.Text type="secondary">
          {done ? 'complete' : mode ? 'live' : ''}
        </Typography.Text>
        <a href={logDownloadUrl(jobId, attempt, replica)} download>
          <DownloadOutlined /> Download
        </a>
      </Flex>
      {poll.error && (
        <Alert type="warning" showIcon style={{ marginBottom: 8 }} title={`Could not read the log: ${poll.error}`} />
      )}
      {gap && (
        <Typography.Paragraph type="warning" style={{ marginBottom: 4, fontSize: 12 }}>
          Some output was rotated away on the node before it could be shown.
        </Typography.Paragraph>
      )}
      {(tailCut || log.truncated) && (
        <Typography.Paragraph type="secondary" style={{ marginBottom: 4, fontSize: 12 }}>
          {log.truncated
            ? 'Older lines were dropped to keep the page fast; '
            : `Showing the last ${FIRST_TAIL_LINES} lines; `}
          Download has the whole log.
        </Typography.Paragraph>
      )}
      <pre
        ref={box}
        className="ty-log"
        data-testid="log-view"
        tabIndex={0}
        aria-label="Job log"
        onScroll={onScroll}
        style={{ maxHeight: '60vh', minHeight: 120, margin: 0 }}
      >
        {result
          ? result.lines.map((line, i) => (
              <Fragment key={i}>
                {line.parts.map((p, j) => (p.match ? <mark key={j}>{p.text}</mark> : <Fragment key={j}>{p.text}</Fragment>))}
                {'\n'}
              </Fragment>
            ))
          : log.text || (loaded ? '(the log is empty so far)' : 'Loading…')}
      </pre>
    </div>
  );
}
