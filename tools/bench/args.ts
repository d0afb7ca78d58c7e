import { parseArgs } from 'node:util';
import { BACKEND_NAMES, type BackendName } from './target.js';

/** What one run measures, and how long it takes. */
export interface BenchOptions {
  /** The backends, in the table's order; `kubernetes` adds the client-go row. Default: all six. */
  backends: BackendName[];
  /** Graceful handovers, and announce → added round trips, per backend. Default 20. */
  rounds: number;
  /** Crash failovers per backend; each waits out the 2 s lease. Default 10. */
  failoverRounds: number;
  /** Length of the lock-throughput run per backend, seconds. Default 5. */
  lockSeconds: number;
  /**
   * Length of each idle request-counting window, seconds: four windows one
   * after the other (a registry, a member, a leader, a leader and a follower),
   * every backend at once. Default 20.
   */
  idleSeconds: number;
}

export const DEFAULT_OPTIONS: Omit<BenchOptions, 'backends'> = { rounds: 20, failoverRounds: 10, lockSeconds: 5, idleSeconds: 20 };

/** `--quick`: a smoke run, seconds per backend; the figures mean little. */
export const QUICK_OPTIONS: Omit<BenchOptions, 'backends'> = { rounds: 3, failoverRounds: 2, lockSeconds: 1, idleSeconds: 2 };

export const USAGE = `Usage: npm run bench -- [--backends ${BACKEND_NAMES.join(',')}] [options]

Prints one table, a row per backend (and client-go's elector with kubernetes):
graceful handover, crash failover and announce -> added (p50 / p99), lock
operations per second among 10 contenders, and the requests per minute an idle
registry, member, leader and follower send, as the server counts them.

  --backends <list>        comma-separated (default: all)
  --rounds <n>             handover and announce rounds (default ${DEFAULT_OPTIONS.rounds})
  --failover-rounds <n>    crash failovers, about 3 s each (default ${DEFAULT_OPTIONS.failoverRounds})
  --lock-seconds <s>       lock-throughput run (default ${DEFAULT_OPTIONS.lockSeconds})
  --idle-seconds <s>       each of the four idle windows (default ${DEFAULT_OPTIONS.idleSeconds})
  --quick                  ${Object.entries(QUICK_OPTIONS).map(([k, v]) => `${k} ${v}`).join(', ')}: a smoke check
  --help

Servers come up through tools/testenv (ROLLCALL_TESTENV_ROOT, ROLLCALL_TESTENV_PORT_BASE).`;

/** Thrown for a command line that cannot run; the message says what is wrong. */
export class UsageError extends Error {}

/** `node:util`'s parseArgs, strict, its complaints as UsageErrors; every option a string but `--help` (and `booleans`). */
export function parseFlags(argv: readonly string[], strings: readonly string[], booleans: readonly string[] = []): Record<string, string | boolean | undefined> {
  try {
    return parseArgs({
      args: [...argv],
      options: Object.fromEntries([...strings.map((name) => [name, { type: 'string' as const }]), ...[...booleans, 'help'].map((name) => [name, { type: 'boolean' as const, default: false }])]),
      strict: true,
      allowPositionals: false,
    }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** `--name`'s value as a positive number, `fallback` when it is absent. */
export function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, not ${JSON.stringify(value)}`);
  return n;
}

/** `--name`'s value as a whole number of at least `min` (default 1), `fallback` when it is absent. */
export function whole(name: string, value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be a whole number of at least ${min}, not ${JSON.stringify(value)}`);
  return n;
}

/** `--name`'s comma-separated backends, each of `known`, in `known`'s order; at least one. `known` is said after an unknown one. */
export function backendList<T extends string>(name: string, value: string, known: readonly T[], saying: string): T[] {
  const given = value.split(',').map((v) => v.trim()).filter(Boolean);
  for (const v of given) {
    if (!(known as readonly string[]).includes(v)) throw new UsageError(`--${name}: no backend ${JSON.stringify(v)}; ${saying}`);
  }
  if (given.length === 0) throw new UsageError(`--${name} names no backend`);
  return known.filter((k) => given.includes(k));
}

/** The options of a command line, or 'help'. */
export function parseBenchArgs(argv: readonly string[]): BenchOptions | 'help' {
  const parsed = parseFlags(argv, ['backends', 'rounds', 'failover-rounds', 'lock-seconds', 'idle-seconds'], ['quick']) as Record<string, string | undefined> & { quick: boolean; help: boolean };
  if (parsed.help) return 'help';
  const backends = backendList('backends', parsed.backends ?? BACKEND_NAMES.join(','), BACKEND_NAMES, `known: ${BACKEND_NAMES.join(', ')}`);
  const defaults = parsed.quick ? QUICK_OPTIONS : DEFAULT_OPTIONS;
  return {
    backends,
    rounds: whole('rounds', parsed.rounds, defaults.rounds),
    failoverRounds: whole('failover-rounds', parsed['failover-rounds'], defaults.failoverRounds),
    lockSeconds: positive('lock-seconds', parsed['lock-seconds'], defaults.lockSeconds),
    idleSeconds: positive('idle-seconds', parsed['idle-seconds'], defaults.idleSeconds),
  };
}
