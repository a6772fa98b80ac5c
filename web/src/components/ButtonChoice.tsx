import type { CSSProperties } from 'react';
import { Button, Space } from 'antd';

export interface Choice<K extends string> {
  value: K;
  label: string;
}

// A choice among a few options as a row of buttons, the chosen one primary.
// Buttons rather than antd Radio or Tabs: those take the option's name as
// the label of what follows, so an input below labelled the same (Password,
// Command) could no longer be found by its label alone.
export function ButtonChoice<K extends string>({
  role,
  label,
  options,
  value,
  onChange,
  id,
  block,
  style,
}: {
  role: 'radiogroup' | 'tablist';
  label: string;
  options: Choice<K>[];
  value: K;
  onChange: (value: K) => void;
  id?: string;
  // Fills the width, the buttons sharing it evenly.
  block?: boolean;
  style?: CSSProperties;
}) {
  const tabs = role === 'tablist';
  return (
    <Space.Compact id={id} block={block} role={role} aria-label={label} style={style}>
      {options.map((o) => (
        <Button
          key={o.value}
          role={tabs ? 'tab' : 'radio'}
          aria-checked={tabs ? undefined : value === o.value}
          aria-selected={tabs ? value === o.value : undefined}
          type={value === o.value ? 'primary' : 'default'}
          style={block ? { flex: 1 } : undefined}
          onClick={() => onChange(o.value)}
        >
          {o.label}
        </Button>
      ))}
    </Space.Compact>
  );
}
