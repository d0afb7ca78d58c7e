import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALL_METRICS } from '../src/index.js';
import { EXPORTED_SERIES, selectedMetrics } from './promql.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('the README', () => {
  it('has one row per metric with its type, labels and meaning, as the code defines them', () => {
    const rows = README.split('\n').filter((l) => l.startsWith('| `rollcall_'));
    expect(rows).toEqual(ALL_METRICS.map((m) => `| \`${m.name}\` | ${m.type} | ${m.labels.map((l) => `\`${l}\``).join(', ') || '—'} | ${m.help} |`));
  });

  it('suggests alerts in valid PromQL on exported metrics only, a registry\'s and a pod runner\'s', () => {
    // every alert table: its rows, up to the first line that is not a table row
    const tables = README.split('| alert | expression |').slice(1).map((t) => t.split('\n').slice(2).filter((_, i, rows) => rows.slice(0, i + 1).every((r) => r.startsWith('|'))));
    expect(tables).toHaveLength(2);
    const exprs = tables.flat().map((row) => /^\|[^|]+\| `([^`]+)`/.exec(row)![1]!);
    expect(exprs.length).toBeGreaterThan(9);
    expect(exprs.some((e) => e.includes('rollcall_pod_runner_'))).toBe(true);
    for (const expr of exprs) {
      const names = selectedMetrics(expr);
      expect(names.length, expr).toBeGreaterThan(0);
      for (const name of names) expect(EXPORTED_SERIES, `${name} in ${expr}`).toContain(name);
    }
  });
});
