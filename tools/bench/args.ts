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

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, not ${JSON.stringify(value)}`);
  return n;
}

function whole(name: string, value: string | undefined, fallback: number): number {
  const n = positive(name, value, fallback);
  if (!Number.isInteger(n)) throw new UsageError(`--${name} must be a whole number, not ${JSON.stringify(value)}`);
  return n;
}

/** The options of a command line, or 'help'. */
export function parseBenchArgs(argv: readonly string[]): BenchOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        backends: { type: 'string' },
        rounds: { type: 'string' },
        'failover-rounds': { type: 'string' },
        'lock-seconds': { type: 'string' },
        'idle-seconds': { type: 'string' },
        quick: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.help) return 'help';
  const backends = (parsed.backends ?? BACKEND_NAMES.join(',')).split(',').map((b) => b.trim()).filter(Boolean);
  for (const b of backends) {
    if (!(BACKEND_NAMES as readonly string[]).includes(b)) throw new UsageError(`--backends: no backend ${JSON.stringify(b)}; known: ${BACKEND_NAMES.join(', ')}`);
  }
  if (backends.length === 0) throw new UsageError('--backends names no backend');
  const defaults = parsed.quick ? QUICK_OPTIONS : DEFAULT_OPTIONS;
  return {
    backends: BACKEND_NAMES.filter((b) => backends.includes(b)),
    rounds: whole('rounds', parsed.rounds, defaults.rounds),
    failoverRounds: whole('failover-rounds', parsed['failover-rounds'], defaults.failoverRounds),
    lockSeconds: positive('lock-seconds', parsed['lock-seconds'], defaults.lockSeconds),
    idleSeconds: positive('idle-seconds', parsed['idle-seconds'], defaults.idleSeconds),
  };
}
