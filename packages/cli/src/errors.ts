import { type ErrorCode, RegistryError } from '@rollcall/core';
import { printable } from './terminal.js';

/** The exit codes of `rollcall`; the README lists them. A code never changes meaning. */
export const ExitCode = {
  OK: 0,
  /** Anything else: a bug, a corrupt record, an unexpected answer. */
  FAILURE: 1,
  /** Bad command line: unknown command or option, missing or invalid argument (INVALID_ARGUMENT). */
  USAGE: 2,
  /** The configuration is invalid (INVALID_CONFIG) or names a backend that is not installed (PLUGIN_NOT_INSTALLED). */
  CONFIG: 3,
  /** The backend cannot be reached or did not answer in time (UNAVAILABLE). */
  UNAVAILABLE: 4,
  /** Credentials refused or a permission missing (UNAUTHENTICATED, PERMISSION_DENIED). */
  PERMISSION: 5,
  /** The election or lock named does not exist (NOT_FOUND). */
  NOT_FOUND: 6,
  /** The record changed while the command worked on it (CONFLICT): run it again. */
  CONFLICT: 7,
  /** `doctor` found a problem, or `--check` found a STALE holder or member. */
  CHECK_FAILED: 8,
  /** `migrate status`: the next step of the migration is not safe now (the reasons are printed). */
  NOT_READY: 9,
  /** A confirmation was declined, or could not be asked (no terminal and no `--yes`). */
  DECLINED: 10,
  /** `tasks cancel`: the cancel is requested on the task's record, but no runner confirmed it within `--wait` (none leads, or it is slow): the task may still run. */
  NOT_CONFIRMED: 11,
  /** Stopped by SIGINT (Ctrl-C); everything it started was stopped first. */
  INTERRUPTED: 130,
  /** Stopped by SIGTERM (`watch`); everything it started was stopped first. */
  TERMINATED: 143,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * Each exit code's line in `--help`, by name: a code added to {@link ExitCode}
 * without its line here does not compile, so the help cannot leave one out.
 */
const EXIT_CODE_HELP: Record<keyof typeof ExitCode, string> = {
  OK: 'ok',
  FAILURE: 'other failure (INTERNAL, CORRUPT_RECORD, ...)',
  USAGE: 'usage, INVALID_ARGUMENT',
  CONFIG: 'INVALID_CONFIG, PLUGIN_NOT_INSTALLED, SCHEMA_MISMATCH',
  UNAVAILABLE: 'UNAVAILABLE',
  PERMISSION: 'UNAUTHENTICATED, PERMISSION_DENIED',
  NOT_FOUND: 'NOT_FOUND (no such election or lock; a registry that does not exist: only the demo creates one)',
  CONFLICT: 'CONFLICT (the record changed meanwhile)',
  CHECK_FAILED: 'doctor found a problem; --check found a STALE holder or member',
  NOT_READY: 'migrate status: the next step is not safe now',
  DECLINED: 'confirmation declined (release without --yes)',
  NOT_CONFIRMED: 'tasks cancel: the cancel is requested on the task record, but no runner confirmed within --wait',
  INTERRUPTED: 'interrupted (Ctrl-C); everything started was stopped',
  TERMINATED: 'terminated (SIGTERM); everything started was stopped',
};

/** The `Exit codes:` section of `rollcall --help`: every code of {@link ExitCode}, in order. */
export function exitCodesHelp(): string {
  const rows = (Object.keys(ExitCode) as (keyof typeof ExitCode)[]).map((name) => [ExitCode[name], EXIT_CODE_HELP[name]] as const).sort(([a], [b]) => a - b);
  return `Exit codes:\n${rows.map(([code, help]) => `  ${String(code).padEnd(5)}${help}`).join('\n')}`;
}

/** Codes of the CLI's own errors, beside core's. */
export type CliCode = ErrorCode | 'USAGE' | 'DECLINED' | 'CHECK_FAILED' | 'DEMO_FAILED';

/** An error the CLI reports as one line: its code, message and hint. */
export class CliError extends Error {
  constructor(
    readonly code: CliCode,
    message: string,
    readonly exitCode: ExitCode,
    readonly hint?: string,
    readonly backend?: string,
  ) {
    super(message);
  }
}

const EXIT_BY_CODE: Partial<Record<CliCode, ExitCode>> = {
  INVALID_CONFIG: ExitCode.CONFIG,
  PLUGIN_NOT_INSTALLED: ExitCode.CONFIG,
  SCHEMA_MISMATCH: ExitCode.CONFIG,
  INVALID_ARGUMENT: ExitCode.USAGE,
  PAYLOAD_TOO_LARGE: ExitCode.USAGE,
  USAGE: ExitCode.USAGE,
  UNAVAILABLE: ExitCode.UNAVAILABLE,
  UNAUTHENTICATED: ExitCode.PERMISSION,
  PERMISSION_DENIED: ExitCode.PERMISSION,
  NOT_FOUND: ExitCode.NOT_FOUND,
  CONFLICT: ExitCode.CONFLICT,
  ALREADY_EXISTS: ExitCode.CONFLICT,
  CHECK_FAILED: ExitCode.CHECK_FAILED,
  DECLINED: ExitCode.DECLINED,
};

const HINTS: Partial<Record<CliCode, string>> = {
  INVALID_CONFIG: 'check that key in --config, -o or REGISTRY_*; `rollcall doctor` shows the configuration as resolved',
  PLUGIN_NOT_INSTALLED: 'run the line above; a backend goes where rollcall is: into the project whose rollcall you run (npx rollcall), or beside a global rollcall',
  SCHEMA_MISMATCH: 'the backend holds records of another Rollcall version; use a Rollcall of that version or another cluster',
  INVALID_ARGUMENT: 'names are 1-128 of A-Za-z0-9._- starting and ending alphanumeric; see the command with --help',
  PAYLOAD_TOO_LARGE: 'make the payload smaller',
  UNAVAILABLE: 'is the backend running and reachable at the configured address? `rollcall doctor` checks the connection',
  UNAUTHENTICATED: 'check the credentials in the configuration (user, password, token, kubeconfig)',
  PERMISSION_DENIED: '`rollcall doctor` lists the missing permissions and what grants them',
  NOT_FOUND: '`rollcall locks` and `rollcall leader` list what exists in this cluster (-o registry.cluster=...)',
  CONFLICT: 'the record changed meanwhile; look again and run the command again',
  CORRUPT_RECORD: 'a record cannot be decoded (edited by hand?); fix or delete it with the backend\'s own tools',
  CLOSED: 'the registry closed while the command ran',
  USAGE: 'see `rollcall --help`',
};

/**
 * The hint without its clauses that send the user to `rollcall <command>`,
 * the command they are running (doctor's configuration check must not say
 * "`rollcall doctor` shows the configuration"). Clauses are `; `-separated.
 */
export function hintFor(hint: string | undefined, command: string | undefined): string | undefined {
  if (!hint || !command) return hint;
  const kept = hint.split('; ').filter((clause) => !clause.includes(`\`rollcall ${command}\``) && !clause.includes(`\`rollcall ${command} `));
  return kept.length ? kept.join('; ') : undefined;
}

/** Folds any error into a CliError with an exit code and a hint (none that names `command`, the command running). */
export function toCliError(err: unknown, command?: string): CliError {
  const e = foldError(err);
  const hint = hintFor(e.hint, command);
  return hint === e.hint ? e : new CliError(e.code, e.message, e.exitCode, hint, e.backend);
}

function foldError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof RegistryError) {
    const message = err.message.replace(/^\[rollcall\] \[[^\]]*\] /, '');
    const key = (err as { key?: unknown }).key;
    const hint =
      err.code === 'INVALID_CONFIG' && typeof key === 'string'
        ? `check ${key} in --config, -o or REGISTRY_*; \`rollcall doctor\` shows the configuration as resolved`
        : err.code === 'NOT_FOUND' && message.startsWith('registry.sqlite.path:')
          ? 'name the file the processes use: -o registry.sqlite.path=<file> or REGISTRY_SQLITE_PATH (no command but the demo creates one)'
          : HINTS[err.code];
    return new CliError(err.code, message, EXIT_BY_CODE[err.code] ?? ExitCode.FAILURE, hint, err.backend);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CliError('INTERNAL', message, ExitCode.FAILURE, 'this looks like a bug in rollcall; please report it with the command you ran');
}

/** The one line an error is reported as: `rollcall: error CODE [backend]: message (hint: ...)`. */
export function formatError(error: CliError): string {
  // A message may quote a record (a holder, a key): shown, never obeyed by the terminal.
  const oneLine = (s: string) => printable(s.replace(/\s*\n\s*/g, ' ').trim());
  const backend = error.backend ? ` [${error.backend}]` : '';
  const hint = error.hint ? ` (hint: ${oneLine(error.hint)})` : '';
  return `rollcall: error ${error.code}${backend}: ${oneLine(error.message)}${hint}`;
}

export function usageError(message: string, hint?: string): CliError {
  return new CliError('USAGE', message, ExitCode.USAGE, hint ?? HINTS.USAGE);
}
