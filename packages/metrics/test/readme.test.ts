import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRICS } from '../src/index.js';
import { EXPORTED_SERIES, selectedMetrics } from './promql.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('the README', () => {
  it('has one row per metric with its type, labels and meaning, as the code defines them', () => {
    const rows = README.split('\n').filter((l) => l.startsWith('| `rollcall_'));
    expect(rows).toEqual(Object.values(METRICS).map((m) => `| \`${m.name}\` | ${m.type} | ${m.labels.map((l) => `\`${l}\``).join(', ') || '—'} | ${m.help} |`));
  });

  it('suggests alerts in valid PromQL on exported metrics only', () => {
    const section = README.slice(README.indexOf('| alert | expression |'), README.indexOf('## The dashboard'));
    const exprs = section.split('\n').slice(2).filter(Boolean).map((row) => /^\|[^|]+\| `([^`]+)`/.exec(row)![1]!);
    expect(exprs.length).toBeGreaterThan(3);
    for (const expr of exprs) {
      const names = selectedMetrics(expr);
      expect(names.length, expr).toBeGreaterThan(0);
      for (const name of names) expect(EXPORTED_SERIES, `${name} in ${expr}`).toContain(name);
    }
  });
});
