import { writesPerHeartbeat } from './aggregate.js';
import { seriesName, type Latency, type ScaleResults, type ScaleRow } from './results.js';

/** One column: its header and how a row fills it ('' for a skipped row). */
interface Column {
  header: string;
  cell(row: ScaleRow): string;
}

const MiB = 2 ** 20;
const NA = 'n/a';

/** p50 / p99 in ms, with how many completed when some did not. */
export function latencyCell(figure: Latency): string {
  if (figure.attempted === 0) return NA;
  if (!figure.summary) return `none of ${figure.attempted}`;
  const cell = `${figure.summary.p50.toFixed(0)} / ${figure.summary.p99.toFixed(0)}`;
  return figure.summary.n < figure.attempted ? `${cell} (${figure.summary.n} of ${figure.attempted})` : cell;
}

const fixed = (digits: number) => (value: number | undefined) => (value === undefined ? NA : value.toFixed(digits));

/** The table's columns, in order. */
export const SCALE_COLUMNS: readonly Column[] = [
  { header: 'N', cell: (r) => String(r.members) },
  { header: 'backend', cell: seriesName },
  { header: 'server CPU cores (idle)', cell: (r) => (r.server ? `${r.server.cores.toFixed(2)} (${r.server.idleCores.toFixed(2)})` : NA) },
  { header: 'server RSS MiB', cell: (r) => fixed(0)(r.server && r.server.rssBytes / MiB) },
  { header: 'requests/s', cell: (r) => fixed(1)(r.requests?.perSecond) },
  { header: 'member writes/s', cell: (r) => fixed(1)(r.requests?.memberWritesPerSecond) },
  { header: 'writes per heartbeat', cell: (r) => fixed(2)(writesPerHeartbeat(r)) },
  { header: 'watch events/s', cell: (r) => fixed(0)(r.watch?.eventsPerSecond) },
  { header: 'events/s per process', cell: (r) => fixed(1)(r.watch?.perProcessPerSecond) },
  { header: 'events/s per master / worker', cell: (r) => (r.watch ? `${r.watch.perMasterPerSecond.toFixed(1)} / ${r.watch.perWorkerPerSecond.toFixed(1)}` : NA) },
  { header: 'CPU per member millicores', cell: (r) => fixed(2)(r.perMember && r.perMember.cores * 1000) },
  { header: 'RSS per member MiB', cell: (r) => fixed(2)(r.perMember && r.perMember.rssBytes / MiB) },
  { header: 'announce → seen p50 / p99 ms', cell: (r) => latencyCell(r.announce) },
  { header: 'crash → removed p50 / p99 ms', cell: (r) => latencyCell(r.crash) },
  { header: 'handover p50 / p99 ms', cell: (r) => latencyCell(r.handover) },
  { header: 'load avg before / after', cell: (r) => (r.load ? `${r.load.before.toFixed(1)} / ${r.load.after.toFixed(1)}` : NA) },
  { header: 'kept up', cell: (r) => (r.skipped ? 'not run' : r.failed ? 'failed' : r.saturated.length === 0 ? 'yes' : 'SATURATED') },
];

/** The rows as one Markdown table, numbers right-aligned. */
export function renderScaleTable(rows: readonly ScaleRow[]): string {
  const cells = [SCALE_COLUMNS.map((c) => c.header), ...rows.map((row) => SCALE_COLUMNS.map((c) => ((row.skipped || row.failed) && c.header !== 'N' && c.header !== 'backend' && c.header !== 'kept up' ? '' : c.cell(row))))];
  const widths = SCALE_COLUMNS.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const text = (i: number) => i === 1;
  const line = (values: string[]) => `| ${values.map((v, i) => (text(i) ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (text(i) ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

/** Under the table: requests by verb, where they were counted, what saturated and why a size was not run. */
export function renderScaleNotes(rows: readonly ScaleRow[]): string {
  const lines: string[] = [];
  for (const row of rows) {
    const parts: string[] = [];
    if (row.skipped) parts.push(`not run: ${row.skipped}`);
    if (row.failed) parts.push(`the harness failed: ${row.failed}`);
    if (row.requests) {
      const verbs = Object.entries(row.requests.byMethod ?? {}).filter(([, n]) => n >= 0.05);
      parts.push(`requests/s by method: ${verbs.length === 0 ? 'not split by the server' : verbs.map(([m, n]) => `${m} ${n.toFixed(1)}`).join(', ')} (${row.requests.source})`);
      const writes = Object.entries(row.requests.memberWritesByMethod ?? {}).filter(([, n]) => n >= 0.05);
      if (writes.length > 0) parts.push(`member writes/s by method: ${writes.map(([m, n]) => `${m} ${n.toFixed(1)}`).join(', ')}${row.requests.memberWriters === undefined ? '' : ` (${row.requests.memberWriters} records written)`}`);
    }
    if (row.server) parts.push(`server processes: ${row.server.units.join(' + ')}`);
    if (row.watch) parts.push(`bookmarks/s ${row.watch.bookmarksPerSecond.toFixed(1)}`);
    // a client-side bottleneck shows here: the worker processes near the machine's cores
    if (row.perMember) parts.push(`worker processes ${(row.perMember.cores * row.perMember.hosted).toFixed(2)} cores in all`);
    if (!row.skipped && !row.failed) parts.push(`${row.opened} ${row.members === 0 ? 'candidates\' registries (no member)' : `of ${row.members} registries`} open; window ${row.windowSeconds.toFixed(0)} s`);
    for (const s of row.saturated) parts.push(`SATURATED: ${s}`);
    lines.push(`- N = ${row.members}, ${seriesName(row)}: ${parts.join('. ')}.`);
  }
  return lines.join('\n');
}

/** The line above the table and the table with its notes: what the command prints and the README shows. */
export function renderScaleReport(results: ScaleResults): string {
  const o = results.options;
  return [
    `Rollcall scale benchmark, ${results.startedAt}; ${results.machine}; load average ${results.loadBefore} before, ${results.loadAfter} after; ${Math.round(results.durationSeconds)} s.`,
    `N simulated processes (one registry, store connection and watch each) in ${o.processes} worker processes: ${o.masters} masters watching role worker, the rest workers; ${o.elections} elections of ${o.candidates} candidates; ${results.timing}. Window ${o.seconds} s per size and backend, with ${o.announces} announces, ${o.crashes} SIGKILLed processes of ${o.crashMembers} workers, ${o.handovers} handovers.`,
    '',
    renderScaleTable(results.rows),
    '',
    renderScaleNotes(results.rows),
  ].join('\n');
}
