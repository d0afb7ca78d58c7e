import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALL_METRICS } from '../src/index.js';
import { EXPORTED_SERIES as SERIES, selectedMetrics } from './promql.js';

const DASHBOARD = new URL('../../../deploy/grafana/rollcall-dashboard.json', import.meta.url);

interface Target {
  expr: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string | { query: string } }[] };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
const variables = dashboard.templating.list.filter((v) => v.type === 'query').map((v) => ({ panel: `variable ${v.name}`, expr: typeof v.query === 'string' ? v.query : v.query.query }));

describe('the Grafana dashboard in deploy/grafana', () => {
  it('has a query in every panel but the rows', () => {
    for (const p of panels.filter((p) => p.type !== 'row')) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    expect(exprs.length).toBeGreaterThan(15);
  });

  it.each(exprs)('$panel: valid PromQL that selects only metrics @rollcall/metrics exports', ({ expr }) => {
    const names = selectedMetrics(expr);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(SERIES, `${name} in ${expr}`).toContain(name);
  });

  it.each(variables)('$panel: label_values of an exported metric', ({ expr }) => {
    const inner = /^label_values\((.+), (\w+)\)$/.exec(expr);
    expect(inner, expr).not.toBeNull();
    for (const name of selectedMetrics(inner![1]!)) expect(SERIES).toContain(name);
  });

  it('shows every metric @rollcall/metrics exports, a registry\'s and a pod runner\'s', () => {
    const shown = new Set([...exprs, ...variables].flatMap(({ expr }) => selectedMetrics(expr.replace(/^label_values\((.+), \w+\)$/, '$1')).map((n) => n.replace(/_(bucket|sum|count)$/, ''))));
    expect([...shown].sort()).toEqual(ALL_METRICS.map((m) => m.name).sort());
  });
});
