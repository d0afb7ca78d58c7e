/** The smallest terminal the view fits; below it (or on TERM=dumb) the demo prints plain lines. */
export const MIN_VIEW = { columns: 60, rows: 16 };

/** Below this width the view leaves out the PID column, so that the payload, heartbeat and items columns keep their room. */
export const PID_COLUMNS = 70;

/** `line` cut to `width` columns, an ellipsis marking the cut. */
export function fitLine(line: string, width: number): string {
  return line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;
}

/** One node as the view's table shows it. */
export interface MemberRow {
  id: string;
  pid: number | string;
  status: string;
  cpu: string;
  memory: string;
  load: string;
  /** The age of its last heartbeat, e.g. `0.4s`; `-` when it has none. */
  beat: string;
  items: readonly string[];
}

/**
 * The table of nodes: ID, PID (left out when `columns` is below
 * {@link PID_COLUMNS}), STATUS, the heartbeat payload (CPU, MEM, LOAD), BEAT
 * (heartbeat age) and ITEMS last, so a narrow screen cuts only the items.
 * `columns` undefined: every column (plain output).
 */
export function memberTable(rows: readonly MemberRow[], columns?: number): string[] {
  const withPid = columns === undefined || columns >= PID_COLUMNS;
  const head = ['ID', ...(withPid ? ['PID'] : []), 'STATUS', 'CPU', 'MEM', 'LOAD', 'BEAT', 'ITEMS'];
  const cells = rows.map((r) => [r.id, ...(withPid ? [String(r.pid)] : []), r.status, r.cpu, r.memory, r.load, r.beat, r.items.join(' ') || '-']);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((cell, i) => (i === c.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(head), ...cells.map(line)];
}

/** The `watch` hint as lines of at most `width`: label and command on one line, else the command on its own (a `\` continuation where even that is too wide), so it runs as printed. */
export function hintLines(command: string, width: number): string[] {
  const one = `watch it: ${command}`;
  if (one.length <= width) return [one];
  if (command.length <= width) return ['watch it from another terminal:', command];
  const cut = command.lastIndexOf(' --config ');
  if (cut < 0) return ['watch it from another terminal:', command];
  return ['watch it from another terminal:', `${command.slice(0, cut)} \\`, `  ${command.slice(cut + 1)}`];
}

/**
 * The view's lines for a screen of `rows`: at most `rows - 1`, each at most
 * `columns - 1` wide (cut with an ellipsis; the hint's lines are made to fit).
 * Blank lines go first, then the oldest events; the hint and the table never.
 */
export function fitFrame(parts: { top: string[]; hint: string[]; table: string[]; events: string[] }, columns: number, rows: number): string[] {
  const budget = rows - 1;
  const width = columns - 1;
  const cut = (lines: string[]) => lines.map((l) => fitLine(l, width));
  const top = cut(parts.top);
  const table = cut(parts.table);
  const spacious = [...top.slice(0, 2), '', ...top.slice(2), ...parts.hint, '', ...table, '', 'events:'];
  const compact = [...top, ...parts.hint, ...table];
  // Spacious while at least three events still fit below it.
  const base = spacious.length + 3 <= budget ? spacious : compact;
  const room = Math.max(0, budget - base.length);
  const events = room > 0 ? parts.events.slice(-room) : [];
  return [...base, ...cut(events.map((e) => `  ${e}`))].slice(0, budget);
}

/** Summary rows as lines: each label in a column of its own, the text word-wrapped to `width` under itself (never mid-word). */
export function summaryLines(rows: readonly [label: string, text: string][], width = Infinity): string[] {
  const indent = 2 + Math.max(...rows.map(([label]) => label.length)) + 2;
  const out = ['summary:'];
  for (const [label, text] of rows) {
    const lines: string[] = [];
    let line = '';
    // A number and its unit stay on one line: `0.06 s`, `(3 s)`.
    for (const word of text.replace(/(\d) (s|ms)\b/g, '$1\u00a0$2').split(' ')) {
      if (line && indent + line.length + 1 + word.length > width) (lines.push(line), (line = word));
      else line = line ? `${line} ${word}` : word;
    }
    lines.push(line);
    out.push(...[`  ${label.padEnd(indent - 4)}  ${lines[0]}`, ...lines.slice(1).map((l) => `${' '.repeat(indent)}${l}`)].map((l) => l.replace(/\u00a0/g, ' ')));
  }
  return out;
}
