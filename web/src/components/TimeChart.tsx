import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

// A line chart of one or more series over time (x in milliseconds since the
// epoch, shown in the browser's time zone) or over steps (xIsTime=false).
// uPlot draws on a canvas and redraws only data on updates, so charts can
// follow a live job without re-creating the chart.
export interface Series {
  label: string;
  values: (number | null)[];
  color?: string;
}

export interface TimeChartProps {
  x: number[];
  series: Series[];
  height?: number;
  xIsTime?: boolean;
  xLabel?: string;
  yLabel?: string;
  title?: string;
  // Fixed bounds of the y axis (utilisation is 0–100 %); a bound left null
  // follows the data.
  yRange?: [number | null, number | null];
}

const PALETTE = ['#1668dc', '#d4380d', '#389e0d', '#722ed1', '#d48806', '#08979c'];

export function TimeChart({ x, series, height = 220, xIsTime = true, xLabel, yLabel, title, yRange }: TimeChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const shape = `${xIsTime}|${yRange?.join(',')}|${series.map((s) => s.label).join('|')}`;

  const data = (): uPlot.AlignedData => [
    xIsTime ? x.map((t) => t / 1000) : x,
    ...series.map((s) => s.values),
  ];

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      title,
      width: Math.max(200, el.clientWidth),
      height,
      scales: {
        x: { time: xIsTime },
        y: yRange
          ? {
              range: (_u, min, max) => [yRange[0] ?? min, yRange[1] ?? Math.max(max, (yRange[0] ?? 0) + 1)],
            }
          : {},
      },
      axes: [{ label: xLabel }, { label: yLabel }],
      series: [
        { label: xIsTime ? 'time' : (xLabel ?? 'step') },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: s.color ?? PALETTE[i % PALETTE.length],
          width: 1.5,
          spanGaps: true,
        })),
      ],
    };
    const plot = new uPlot(opts, data(), el);
    chart.current = plot;
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(200, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
      chart.current = null;
    };
    // Re-created only when the series set changes; data updates below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, height]);

  useEffect(() => {
    chart.current?.setData(data());
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [x, series]);

  return <div ref={box} className="ty-chart" data-testid="time-chart" />;
}
