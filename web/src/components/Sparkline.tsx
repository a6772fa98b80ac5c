// A small inline SVG line for a series of values in a fixed range (GPU
// utilisation 0–100): cheap enough to draw dozens on one page, no canvas.
export interface SparklineProps {
  values: number[];
  width?: number;
  height?: number;
  max?: number;
  color?: string;
  label?: string;
}

export function sparklinePoints(values: number[], width: number, height: number, max: number): string {
  if (values.length === 0) return '';
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values
    .map((v, i) => {
      const clamped = Math.max(0, Math.min(max, v));
      const x = values.length > 1 ? i * step : width / 2;
      const y = height - (clamped / max) * (height - 2) - 1;
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
}

export function Sparkline({ values, width = 120, height = 28, max = 100, color = '#1668dc', label }: SparklineProps) {
  return (
    <svg width={width} height={height} role="img" aria-label={label ?? 'trend'} className="ty-sparkline">
      <rect x={0} y={0} width={width} height={height} fill="none" />
      {values.length > 0 && (
        <polyline points={sparklinePoints(values, width, height, max)} fill="none" stroke={color} strokeWidth={1.5} />
      )}
    </svg>
  );
}
