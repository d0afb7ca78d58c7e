import { readFileSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { METRICS } from '../src/index.js';

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

/** Every series name a scrape can hold: each metric, and a histogram's _bucket, _sum and _count. */
const SERIES = new Set(Object.values(METRICS).flatMap((m) => (m.type === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name])));

/** The metric names an expression selects, read from its PromQL syntax tree; throws on a syntax error. Grafana's `$__…` intervals become a duration first. */
function selectedMetrics(expr: string): string[] {
  const promql = expr.replace(/\$__\w+/g, '5m');
  const names: string[] = [];
  parser.parse(promql).iterate({
    enter(node) {
      if (node.type.isError) throw new Error(`not valid PromQL at ${node.from}: ${promql}`);
      if (node.type.name === 'Identifier' && node.node.parent?.type.name === 'VectorSelector') names.push(promql.slice(node.from, node.to));
    },
  });
  return names;
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

  it('shows every metric @rollcall/metrics exports', () => {
    const shown = new Set([...exprs, ...variables].flatMap(({ expr }) => selectedMetrics(expr.replace(/^label_values\((.+), \w+\)$/, '$1')).map((n) => n.replace(/_(bucket|sum|count)$/, ''))));
    expect([...shown].sort()).toEqual(Object.values(METRICS).map((m) => m.name).sort());
  });
});
