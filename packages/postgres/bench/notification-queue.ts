/**
 * A watching process paused for a minute under writes: how full does
 * PostgreSQL's notification queue get (`pg_notification_queue_usage()`, a
 * fraction of its 8 GB), and does the process catch up when it resumes?
 *
 *   ROLLCALL_TESTENV_ROOT=... ROLLCALL_TESTENV_PORT_BASE=... npx tsx packages/postgres/bench/notification-queue.ts [pauseSeconds] [writers] [control]
 *
 * On the test server of tools/testenv (brought up first: `npm run testenv -- up postgres`).
 * The watcher is a child process with a real store and watch, stopped with
 * SIGSTOP (its socket unread, as a GC pause or a frozen VM); the writers are
 * stores in this process updating a record each, as fast as they can.
 * `control` adds a listener that holds a transaction open through the pause
 * (a backend in a transaction delivers nothing, so the queue must grow): it
 * shows the measurement sees a queue that is not drained.
 */
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { ChildHandle, serveParent } from '@rollcall/child-harness';
import { machine, readTestEnv } from '@rollcall/tools/testenv';
import { createPostgresStore } from '../src/index.js';
import type { NotifyListener } from '../src/watch.js';

const env = readTestEnv().postgres ?? fail('postgres is not up: npm run testenv -- up postgres (with the same ROLLCALL_TESTENV_* variables)');
function fail(message: string): never {
  throw new Error(message);
}
const record = (holder: string) => ({ holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
const options = (schema: string) => ({ host: env.host, port: env.port, user: env.user, password: env.password, database: env.database, schema });

/** What the watcher reports, through the child-process harness's JSON lines (a stopped process's are read when it resumes). */
type WatcherEvent = { type: 'done' } | { type: 'error'; code: string };

/** How long the resumed watcher may take to see the last write, ms: a watcher that never catches up fails the run. */
const CATCH_UP_BOUND_MS = 600_000;

async function child(schema: string): Promise<void> {
  const parent = serveParent<never, never, WatcherEvent>({ transport: 'lines' });
  const store = await createPostgresStore({ cluster: 'nq', ...options(schema) });
  const { revision } = await store.list('');
  store.watch('', revision, {
    event: (e) => {
      if (e.type === 'put' && e.record.key === 'lock/done') parent.report({ type: 'done' });
    },
    error: (err) => parent.report({ type: 'error', code: err.code }),
  });
  const listener = store.database.dialect.changeSignal as NotifyListener;
  while (!listener.listening) await new Promise((r) => setTimeout(r, 20));
  parent.ready();
}

async function main(): Promise<void> {
  const pauseMs = Number(process.argv[2] ?? 60) * 1000;
  const writers = Number(process.argv[3] ?? 4);
  const control = process.argv[4] === 'control';
  const pg = createRequire(import.meta.url)('pg') as { Client: new (c: Record<string, unknown>) => { connect(): Promise<void>; query(s: string): Promise<{ rows: Record<string, unknown>[] }>; end(): Promise<void> } };
  const admin = new pg.Client({ host: env.host, port: env.port, user: env.user, password: env.password, database: env.database });
  await admin.connect();
  const usage = async () => Number((await admin.query('SELECT pg_notification_queue_usage() AS u')).rows[0]!.u);
  const schema = `rollcall_nq_${process.pid}`;
  await admin.query(`CREATE SCHEMA ${schema}`);
  try {
    // Distinct poolSize: a store of its own per writer, so they write in parallel.
    const stores = await Promise.all(Array.from({ length: writers }, (_, i) => createPostgresStore({ cluster: 'nq', ...options(schema), poolSize: i + 1 })));
    const versions = await Promise.all(stores.map((s, i) => s.create(`lock/w${i}`, record('a')).then((r) => r.version)));
    const watcher = await ChildHandle.start<never, WatcherEvent>({ entry: fileURLToPath(import.meta.url), args: ['child', schema], execArgv: process.execArgv, transport: 'lines', label: 'the watcher' }, 60_000);
    const holder = control ? new pg.Client({ host: env.host, port: env.port, user: env.user, password: env.password, database: env.database }) : undefined;
    if (holder) {
      await holder.connect();
      await holder.query('LISTEN rollcall_changes');
      await holder.query('BEGIN');
      await holder.query('SELECT 1');
    }
    const before = await usage();
    watcher.signal('SIGSTOP');
    const start = performance.now();
    let writes = 0;
    let peak = before;
    let stop = false;
    const sampler = (async () => {
      while (!stop) {
        peak = Math.max(peak, await usage());
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    await Promise.all(
      stores.map(async (s, i) => {
        while (performance.now() - start < pauseMs) {
          versions[i] = (await s.update(`lock/w${i}`, record(String(writes)), versions[i]!)).version;
          writes++;
        }
      }),
    );
    stop = true;
    await sampler;
    const atResume = await usage();
    if (holder) await holder.query('COMMIT').then(() => holder.end());
    peak = Math.max(peak, atResume);
    const done = watcher.event((e) => e.type === 'done', CATCH_UP_BOUND_MS, 'the last write');
    watcher.signal('SIGCONT');
    const resumed = performance.now();
    await stores[0]!.create('lock/done', record('done'));
    await done;
    const caughtUpMs = performance.now() - resumed;
    const after = await usage();
    const seconds = (performance.now() - start - caughtUpMs) / 1000;
    console.log(
      JSON.stringify({
        at: new Date().toISOString(),
        machine: machine(),
        pauseSeconds: pauseMs / 1000,
        control,
        writers,
        writes,
        writesPerSecond: Math.round(writes / seconds),
        queueUsage: { before, peak, atResume, afterCatchUp: after },
        caughtUpMs: Math.round(caughtUpMs),
        watchErrors: watcher.events.flatMap(({ event }) => (event.type === 'error' ? [`error ${event.code}`] : [])),
      }),
    );
    watcher.signal('SIGTERM');
    await Promise.all(stores.map((s) => s.close()));
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

if (process.argv[2] === 'child') await child(process.argv[3]!);
else await main();
