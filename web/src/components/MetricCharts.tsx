import { useEffect, useRef, useState } from 'react';
import { Alert, Col, Empty, Row, Typography } from 'antd';
import { api } from '../api/client';
import { usePoll } from '../api/usePoll';
import type { MetricPoint, MetricSummary } from '../api/types';
import { TimeChart } from './TimeChart';
import { mergePoints, metricChart, orderMetricNames, thinPoints } from '../lib/jobs';

interface MetricNames {
  job: number;
  metrics: MetricSummary[];
}

interface MetricSeriesPage {
  job: number;
  name: string;
  points: MetricPoint[];
  next_after: number | null;
}

// Points kept per series; past this the series is thinned the way the
// server's max_points does it.
const KEEP_POINTS = 5000;
const FIRST_POINTS = 1000;

// Training metrics the job printed as TRAINYARD_METRIC lines: one chart per
// name, over steps when the job reported them, else over time. Each poll
// reads only the series whose latest point is newer than what is shown, and
// only the points after it.
export function MetricCharts({ jobId, active }: { jobId: number; active: boolean }) {
  const [series, setSeries] = useState<Record<string, MetricPoint[]>>({});
  const seriesRef = useRef(series);
  seriesRef.current = series;
  const forJob = useRef(jobId);

  useEffect(() => {
    forJob.current = jobId;
    seriesRef.current = {};
    setSeries({});
  }, [jobId]);

  const poll = usePoll(
    async (signal) => {
      const id = jobId;
      const names = await api<MetricNames>(`/api/v1/jobs/${id}/metrics`, { signal });
      const updates: Record<string, MetricPoint[]> = {};
      await Promise.all(
        names.metrics.map(async (m) => {
          const have = seriesRef.current[m.name] ?? [];
          const last = have.length ? have[have.length - 1].id : null;
          if (last !== null && m.latest && m.latest.id <= last) return;
          let points = have;
          let after = last;
          if (after === null) {
            const first = await api<MetricSeriesPage>(
              `/api/v1/jobs/${id}/metrics?name=${encodeURIComponent(m.name)}&max_points=${FIRST_POINTS}`,
              { signal },
            );
            points = first.points;
          } else {
            // Pages until caught up; next_after is set only while more remain.
            for (let page = 0; page < 20 && after !== null; page++) {
              const next: MetricSeriesPage = await api<MetricSeriesPage>(
                `/api/v1/jobs/${id}/metrics?name=${encodeURIComponent(m.name)}&after=${after}`,
                { signal },
              );
              points = mergePoints(points, next.points);
              after = next.next_after;
            }
          }
          updates[m.name] = thinPoints(points, KEEP_POINTS);
        }),
      );
      if (forJob.current === id && Object.keys(updates).length > 0) {
        const merged = { ...seriesRef.current, ...updates };
        seriesRef.current = merged;
        setSeries(merged);
      }
      return names.metrics.map((m) => m.name);
    },
    // Ingestion runs every 2 s and can trail the job's end a little, so a
    // finished job is still read now and then.
    active ? 3000 : 15000,
    [jobId],
  );

  const names = orderMetricNames(poll.data ?? Object.keys(series));

  return (
    <section aria-labelledby={`metrics-${jobId}`} data-testid="metric-charts">
      <Typography.Title level={4} id={`metrics-${jobId}`} style={{ marginTop: 0 }}>
        Training metrics
      </Typography.Title>
      {poll.error && (
        <Alert type="warning" showIcon style={{ marginBottom: 8 }} title={`Could not read metrics: ${poll.error}`} />
      )}
      {!poll.loading && names.length === 0 && !poll.error ? (
        <Empty
          image={Empty.PRESENTED_IMAGE_SIMPLE}
          description="no training metrics yet — print TRAINYARD_METRIC {...} lines"
        />
      ) : (
        <Row gutter={[16, 16]}>
          {names.map((name) => {
            const pts = series[name] ?? [];
            const chart = metricChart(pts);
            const latest = pts.length ? pts[pts.length - 1] : null;
            return (
              <Col key={name} xs={24} xl={12} xxl={8} data-metric={name}>
                <Typography.Text strong>{name}</Typography.Text>
                {latest && (
                  <Typography.Text type="secondary" style={{ marginLeft: 8 }}>
                    latest {formatValue(latest.value)}
                    {latest.step !== null && latest.step !== undefined ? ` at step ${latest.step}` : ''}
                  </Typography.Text>
                )}
                <TimeChart
                  x={chart.x}
                  series={[{ label: name, values: chart.values }]}
                  xIsTime={chart.xIsTime}
                  xLabel={chart.xIsTime ? undefined : 'step'}
                  height={220}
                />
              </Col>
            );
          })}
        </Row>
      )}
    </section>
  );
}

function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}
