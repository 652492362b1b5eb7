import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The series a worker exports (docs/operators.md "Metrics"), each as the dashboard may query it. */
const exported = [
  'toolgate_calls_total',
  'toolgate_admission_refusals_total',
  'toolgate_tool_duration_seconds_bucket',
  'toolgate_approval_wait_seconds_bucket',
];

describe('the Grafana dashboard in deploy/grafana', () => {
  const dashboard = JSON.parse(
    readFileSync(new URL('../../deploy/grafana/toolgate-dashboard.json', import.meta.url), 'utf8'),
  ) as {
    uid: string;
    __inputs: Array<{ name: string; pluginId: string }>;
    panels: Array<{ title: string; datasource: { uid: string }; targets: Array<{ expr: string }> }>;
  };

  it('imports with a Prometheus data source chosen at import', () => {
    expect(dashboard.uid).toBe('toolgate-overview');
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' }),
    ]);
    // Grafana's own placeholder syntax, filled in at import.
    const placeholder = ['$', '{DS_PROMETHEUS}'].join('');
    for (const panel of dashboard.panels) expect(panel.datasource.uid).toBe(placeholder);
  });

  it('queries only series the workers export, and every one of them', () => {
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        const names = target.expr.match(/toolgate_[a-z_]+/g) ?? [];
        expect(names.length, panel.title).toBeGreaterThan(0);
        for (const name of names) {
          expect(exported, `${panel.title}: ${name}`).toContain(name);
          queried.add(name);
        }
      }
    }
    expect([...queried].sort()).toEqual([...exported].sort());
  });
});
