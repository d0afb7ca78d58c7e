import { UsageError } from './args.js';

/** What a benchmark's `run` is given besides its options. */
export interface BenchRun {
  /** When the run started, `Date.now()`. */
  started: number;
  /** Prints a progress line to stderr, stamped with the seconds since the start. */
  progress(line: string): void;
}

/**
 * The `main` of a benchmark's command line: parses `process.argv` (a usage
 * error prints the message and the usage, exit 2; `--help` the usage, exit 0),
 * runs, and exits 0, or 1 with the failure. Progress goes to stderr, results
 * to stdout.
 */
export function benchMain<O>(name: string, usage: string, parse: (argv: readonly string[]) => O | 'help', run: (options: O, context: BenchRun) => Promise<void>): void {
  const main = async (): Promise<number> => {
    let options: O | 'help';
    try {
      options = parse(process.argv.slice(2));
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      console.error(`${err.message}\n\n${usage}`);
      return 2;
    }
    if (options === 'help') {
      console.log(usage);
      return 0;
    }
    const started = Date.now();
    await run(options, { started, progress: (line) => console.error(`[${name} +${Math.round((Date.now() - started) / 1000)} s] ${line}`) });
    return 0;
  };
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`[${name}] failed:`, err);
      process.exit(1);
    },
  );
}
