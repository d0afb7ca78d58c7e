import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

/** The machine a benchmark ran on, for the line above its table: cores and their model, memory, OS, Node. Every benchmark prints this one. */
export function machine(): string {
  const os = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? process.platform;
  const model = cpus()[0]?.model.trim();
  return `${cpus().length} cores${model ? ` (${model})` : ''}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${os}, Node ${process.version}`;
}

/** The 1, 5 and 15-minute load averages now. */
export const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
