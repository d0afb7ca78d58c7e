import { IDLE_ROLES, isNotApplicable, type BenchRow, type Figure, type IdleRole, type RoleRequests } from './results.js';
import type { Summary } from '../testenv/measure/stats.js';

/** One column: its header and how a row fills it. */
interface Column {
  header: string;
  cell(row: BenchRow): string;
}

const NA = 'n/a';

function latency(figure: Figure<Summary>): string {
  return isNotApplicable(figure) ? NA : `${figure.p50.toFixed(1)} / ${figure.p99.toFixed(1)}`;
}

function requests(row: BenchRow, role: IdleRole): string {
  if (isNotApplicable(row.requests)) return NA;
  const figure = row.requests.roles[role];
  return isNotApplicable(figure) ? NA : figure.perMinute.toFixed(1);
}

const ROLE_HEADERS: Record<IdleRole, string> = { registry: 'idle registry', member: 'member', leader: 'leader', follower: 'follower' };

/** The table's columns, in order. */
export const COLUMNS: readonly Column[] = [
  { header: 'backend', cell: (r) => r.backend },
  { header: 'handover p50 / p99 ms', cell: (r) => latency(r.handover) },
  { header: 'crash failover p50 / p99 ms', cell: (r) => latency(r.failover) },
  { header: 'announce → added p50 / p99 ms', cell: (r) => latency(r.announce) },
  { header: 'lock ops/s (10 contenders)', cell: (r) => (isNotApplicable(r.lock) ? NA : r.lock.opsPerSecond.toFixed(1)) },
  { header: 'lock wait p50 / p99 ms', cell: (r) => (isNotApplicable(r.lock) ? NA : latency(r.lock.wait)) },
  { header: 'lock hand-off p50 / p99 ms', cell: (r) => (isNotApplicable(r.lock) ? NA : latency(r.lock.handoff)) },
  ...IDLE_ROLES.map((role) => ({ header: `req/min ${ROLE_HEADERS[role]}`, cell: (r: BenchRow) => requests(r, role) })),
];

/** The rows as one Markdown table, columns padded to line up in a terminal too. */
export function renderTable(rows: readonly BenchRow[]): string {
  const cells = [COLUMNS.map((c) => c.header), ...rows.map((row) => COLUMNS.map((c) => c.cell(row)))];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) => `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

function byMethod(requests: RoleRequests): string {
  const entries = Object.entries(requests.byMethod ?? {}).filter(([, n]) => Math.abs(n) >= 0.05);
  return entries.length === 0 ? 'none' : entries.map(([m, n]) => `${m} ${n.toFixed(1)}`).join(', ');
}

/** What the table cannot show: why a figure is n/a, how requests were counted and split, lock fairness. */
export function renderNotes(rows: readonly BenchRow[]): string {
  const lines: string[] = [];
  for (const row of rows) {
    const parts: string[] = [];
    for (const [name, figure] of [['handover', row.handover], ['crash failover', row.failover], ['announce', row.announce], ['locks', row.lock]] as const) {
      if (isNotApplicable(figure)) parts.push(`${name} n/a: ${figure.na}`);
    }
    if (!isNotApplicable(row.lock)) parts.push(`lock cycles per contender ${Math.min(...row.lock.perContender)}–${Math.max(...row.lock.perContender)}`);
    const requests = row.requests;
    if (isNotApplicable(requests)) parts.push(`requests n/a: ${requests.na}`);
    else {
      const figures = IDLE_ROLES.map((role) => [role, requests.roles[role]] as const);
      const split = figures.some(([, f]) => !isNotApplicable(f) && f.byMethod);
      const roles = figures.map(([role, f]) => (isNotApplicable(f) ? `${role} n/a (${f.na})` : `${role}: ${byMethod(f)}`));
      parts.push(`requests from ${requests.source}${split ? `; per minute by method: ${roles.join('; ')}` : ''}`);
    }
    lines.push(`- ${row.backend}: ${parts.join('. ')}.`);
  }
  return lines.join('\n');
}
