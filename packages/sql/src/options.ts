import type { OptionSchema } from '@rollcall/core/spi';
import { tablePrefixProblem } from './schema.js';

/** The keys every SQL backend has, relative to `registry.<type>.`. */
export interface SqlOptions {
  /** Prefix of the three table names (`<prefix>state`, `<prefix>records`, `<prefix>changes`). Default `rollcall_`. */
  readonly tablePrefix: string;
  /** Creates the tables on first use when they are missing. Turn off when a DBA applies schema.sql. Default true. */
  readonly createSchema: boolean;
  /** How often the change table is read for the watch, milliseconds: one query per interval for every watcher of the process. */
  readonly pollIntervalMs: number;
  /** How often this process purges old changes, milliseconds. Default 60000. */
  readonly purgeIntervalMs: number;
  /** How long changes are kept for watches to resume from, milliseconds; a watch further behind relists. Default 600000 (10 min). */
  readonly changeRetentionMs: number;
}

/** The option specs of {@link SqlOptions}, for a backend's schema; `pollIntervalMs`'s default is the backend's. */
export function sqlOptions(defaults: { pollIntervalMs: number }): OptionSchema {
  return {
    tablePrefix: {
      type: 'string',
      default: 'rollcall_',
      doc: 'Prefix of the table names: <prefix>state, <prefix>records, <prefix>changes.',
      check: tablePrefixProblem,
    },
    createSchema: { type: 'boolean', default: true, doc: 'Create the tables on first use when missing (false: apply schema.sql yourself).' },
    pollIntervalMs: {
      type: 'integer',
      default: defaults.pollIntervalMs,
      min: 10,
      max: 60_000,
      doc: `Interval of the change-table poll that feeds every watch of the process, ms. Default ${defaults.pollIntervalMs}.`,
    },
    purgeIntervalMs: { type: 'integer', default: 60_000, min: 1000, doc: 'Interval of the purge of old changes, ms. Default 60000.' },
    changeRetentionMs: {
      type: 'integer',
      default: 600_000,
      min: 1000,
      doc: 'How long changes are kept for a watch to resume from, ms; a watch further behind relists. Default 600000.',
    },
  };
}
