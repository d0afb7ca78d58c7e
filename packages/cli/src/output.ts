import Table from 'cli-table3';
import { usageError } from './errors.js';
import { printable, printableJson } from './terminal.js';

export type OutputFormat = 'table' | 'json';

/** `--output table|json`, `--json`. */
export function outputFormat(opts: { output?: string; json?: boolean }): OutputFormat {
  if (opts.json) return 'json';
  const format = opts.output ?? 'table';
  if (format !== 'table' && format !== 'json') throw usageError(`--output ${JSON.stringify(format)}: expected table or json`);
  return format;
}

const BORDERLESS = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '',
  right: '', 'right-mid': '', middle: '  ',
};

/** A kubectl-style table: upper-case headers, no borders, no colours. */
export function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head: head.map((h) => h.toUpperCase()), chars: BORDERLESS, style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true } });
  for (const row of rows) t.push(row.map((cell) => printable(String(cell))));
  return t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

export function printJson(value: unknown): void {
  process.stdout.write(printableJson(value, 2) + '\n');
}

/** `1.2s`, `3m04s`, `2h05m`: a short age. */
export function age(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 0) ms = 0;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

/** Milliseconds since `date`, by this host's clock; undefined when unknown. */
export function since(date: Date | string | null | undefined): number | undefined {
  if (!date) return undefined;
  const ms = typeof date === 'string' ? Date.parse(date) : date.getTime();
  return Number.isNaN(ms) ? undefined : Date.now() - ms;
}

/** Compact JSON, cut to `max` characters. */
export function compactJson(value: unknown, max = 80): string {
  if (value === undefined) return '-';
  const text = printableJson(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * A member's incarnation for a table or a text line: a Kubernetes uid cut to
 * its first 8 characters (as `kubectl` users read uids), anything else
 * (a creation revision, migrate's `from:`/`to:` prefix) as it is. JSON
 * output carries it whole.
 */
export function shortIncarnation(incarnation: string): string {
  return incarnation.replace(UID, (uid) => uid.slice(0, 8));
}
