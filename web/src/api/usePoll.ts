import { useCallback, useEffect, useRef, useState } from 'react';
import { errorMessage } from './client';

export interface Poll<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  refresh: () => void;
}

// Loads `load()` now and again every `intervalMs` while the tab is visible
// (a hidden tab asks for nothing, so a forgotten browser costs the server
// nothing). Keeps the last good data when a poll fails, so the page does not
// flash empty during a server restart. `deps` restart the cycle.
export function usePoll<T>(
  load: (signal: AbortSignal) => Promise<T>,
  intervalMs: number,
  deps: unknown[],
): Poll<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let controller: AbortController | undefined;
    const run = async () => {
      if (stopped) return;
      if (document.visibilityState === 'hidden') {
        timer = setTimeout(run, intervalMs);
        return;
      }
      controller = new AbortController();
      try {
        const value = await loadRef.current(controller.signal);
        if (!stopped) {
          setData(value);
          setError(null);
        }
      } catch (e) {
        if (!stopped && !(e instanceof DOMException && e.name === 'AbortError')) {
          setError(errorMessage(e));
        }
      } finally {
        if (!stopped) setLoading(false);
      }
      if (!stopped && intervalMs > 0) timer = setTimeout(run, intervalMs);
    };
    const onVisible = () => {
      if (document.visibilityState === 'visible') {
        clearTimeout(timer);
        void run();
      }
    };
    setLoading(true);
    void run();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      stopped = true;
      clearTimeout(timer);
      controller?.abort();
      document.removeEventListener('visibilitychange', onVisible);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [intervalMs, tick, ...deps]);

  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, refresh };
}
