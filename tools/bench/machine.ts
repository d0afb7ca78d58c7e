import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

/** The machine a benchmark ran on, for the line above its table: cores, memory, OS, Node. */
export function machine(): string {
  const os = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? process.platform;
  return `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, ${os}, Node ${process.version}`;
}

/** The 1, 5 and 15-minute load averages now. */
export const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
