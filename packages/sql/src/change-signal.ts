/** What a {@link ChangeSignal} tells the change poller. */
export interface ChangeSignalHandlers {
  /** Changes were committed (several commits may be reported by one call). */
  changed(): void;
  /** The signal is up: from now on every commit calls `changed`, so the poller reads only when told. */
  up(): void;
  /** The signal is down and may miss commits until the next `up`: the poller reads on its interval meanwhile. */
  down(error: unknown): void;
}

/**
 * A push signal of committed changes from the database, such as PostgreSQL's
 * LISTEN/NOTIFY. With one, an idle process reads the change table only when a
 * write was committed (and once after every `up`, to catch what came before
 * it), instead of once per poll interval.
 */
export interface ChangeSignal {
  /** Starts listening; idempotent. Called when the process's first watch starts. */
  start(handlers: ChangeSignalHandlers): void;
  /** Stops listening and releases its connection. */
  close(): Promise<void>;
}
