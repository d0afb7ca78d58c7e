import { parser } from '@prometheus-io/lezer-promql';
import { ALL_METRICS } from '../src/index.js';

/** Every series name a scrape can hold: each metric, and a histogram's _bucket, _sum and _count. */
export const EXPORTED_SERIES: ReadonlySet<string> = new Set(ALL_METRICS.flatMap((m) => (m.type === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name])));

/**
 * The metric names a PromQL expression selects, read from its syntax tree by
 * Prometheus's own grammar; throws on a syntax error. Grafana's `$__…`
 * intervals become a duration first.
 */
export function selectedMetrics(expr: string): string[] {
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
