/**
 * `npm run bench -- --backends memory,sqlite,mysql,postgres,etcd,zookeeper,kubernetes`:
 * the one benchmark of every backend, printed as one table (see args.ts for
 * the options). Progress goes to stderr, the table and its notes to stdout.
 */
import { load, machine } from '../testenv/measure/machine.js';
import { parseBenchArgs, USAGE } from './args.js';
import { benchMain } from './main.js';
import { runBenchmark } from './run.js';
import { renderNotes, renderTable } from './table.js';
import { BENCH_TIMING } from './timing.js';

benchMain('bench', USAGE, parseBenchArgs, async (options, { started, progress }) => {
  const loadBefore = load();
  const rows = await runBenchmark(options, progress);
  const t = BENCH_TIMING;
  console.log(`Rollcall benchmark, ${new Date(started).toISOString()}; ${machine()}; load average ${loadBefore} before, ${load()} after; ${Math.round((Date.now() - started) / 1000)} s.`);
  console.log(
    `Elections and locks: lease ${t.leaseDurationMs} ms, renew deadline ${t.renewDeadlineMs} ms, retry ${t.retryPeriodMs} ms; ${options.rounds} handovers and announces, ${options.failoverRounds} crash failovers (SIGKILL), locks for ${options.lockSeconds} s; idle requests with each backend's default timings, windows of ${options.idleSeconds} s.`,
  );
  console.log('');
  console.log(renderTable(rows));
  console.log('');
  console.log(renderNotes(rows));
});
