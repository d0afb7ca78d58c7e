/** A log method with pino's shape: an optional object of fields, then a message. */
export interface LogFn {
  (fields: Record<string, unknown>, message?: string): void;
  (message: string): void;
}

/**
 * The logger Rollcall writes to: pino's method shape, so a pino logger can be
 * passed as is. Nothing is printed by default. Rollcall never logs a credential.
 */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

const discard = () => {};

/** The default logger: drops everything. */
export const silentLogger: Logger = { debug: discard, info: discard, warn: discard, error: discard };
