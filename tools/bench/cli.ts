/**
 * `npm run bench -- --backends memory,sqlite,mysql,postgres,etcd,zookeeper,kubernetes`:
 * the one benchmark of every backend, printed as one table (see args.ts for
 * the options). Progress goes to stderr, the table and its notes to stdout.
 */
import { parseBenchArgs, UsageError, USAGE } from './args.js';
import { load, machine } from './machine.js';
import { runBenchmark } from './run.js';
import { renderNotes, renderTable } from './table.js';
import { BENCH_TIMING } from './timing.js';

async function main(): Promise<number> {
  let options;
  try {
    options = parseBenchArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  const started = Date.now();
  const loadBefore = load();
  const rows = await runBenchmark(options, (line) => console.error(`[bench +${Math.round((Date.now() - started) / 1000)} s] ${line}`));
  const t = BENCH_TIMING;
  console.log(`Rollcall benchmark, ${new Date(started).toISOString()}; ${machine()}; load average ${loadBefore} before, ${load()} after; ${Math.round((Date.now() - started) / 1000)} s.`);
  console.log(
    `Elections and locks: lease ${t.leaseDurationMs} ms, renew deadline ${t.renewDeadlineMs} ms, retry ${t.retryPeriodMs} ms; ${options.rounds} handovers and announces, ${options.failoverRounds} crash failovers (SIGKILL), locks for ${options.lockSeconds} s; idle requests with each backend's default timings, windows of ${options.idleSeconds} s.`,
  );
  console.log('');
  console.log(renderTable(rows));
  console.log('');
  console.log(renderNotes(rows));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('[bench] failed:', err);
    process.exit(1);
  },
);
