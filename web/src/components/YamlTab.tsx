import { Alert, Input, Typography } from 'antd';
import type { YamlProblem } from '../lib/spec';

interface Props {
  value: string;
  onChange: (text: string) => void;
  problems: YamlProblem[];
}

function where(p: YamlProblem): string {
  if (p.line === undefined) return '';
  return p.column !== undefined ? `Line ${p.line}, column ${p.column}: ` : `Line ${p.line}: `;
}

// The spec as YAML text, the one place the UI shows a spec as text. Parse
// problems are listed with their line and the text stays as typed.
export default function YamlTab({ value, onChange, problems }: Props) {
  return (
    <div>
      {problems.length > 0 && (
        <Alert
          type="error"
          showIcon
          style={{ marginBottom: 12 }}
          title="The YAML has errors"
          description={
            <ul style={{ margin: 0, paddingLeft: 18 }} data-testid="yaml-errors">
              {problems.map((p, i) => (
                <li key={i}>
                  {where(p)}
                  {p.message}
                </li>
              ))}
            </ul>
          }
        />
      )}
      <Typography.Paragraph type="secondary" style={{ marginBottom: 8 }}>
        The fields are those of docs/job-spec.md. Submitting from this tab sends this text as it is.
      </Typography.Paragraph>
      <Input.TextArea
        aria-label="Job spec YAML"
        data-testid="yaml-editor"
        value={value}
        onChange={(e) => onChange(e.target.value)}
        autoSize={{ minRows: 18, maxRows: 48 }}
        spellCheck={false}
        style={{ fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace", fontSize: 13 }}
      />
    </div>
  );
}
