import { randomBytes } from 'node:crypto';
import { createRegistry, type Registry } from '@rollcall/core';
import { readTestEnv } from '@rollcall/tools/testenv';
import { waitFor } from '@rollcall/conformance';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from './cli.js';

// PostgreSQL and ZooKeeper of tools/, started by the global setup: the two backends that create something on a writer's connect.
const env = readTestEnv();
const opened: Registry[] = [];
afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
});

const suffix = () => randomBytes(4).toString('hex');

/** Each backend's CLI flags for a place where no registry is yet, and the library's configuration of the same place. */
const backends = [
  {
    name: 'postgres',
    place: () => {
      const pg = env.postgres!;
      const tablePrefix = `rc_${suffix()}_`;
      const section = { host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: pg.database, tablePrefix };
      return { args: ['-t', 'postgres', '-c', 'rel', ...Object.entries(section).map(([k, v]) => ['-o', `postgres.${k}=${v}`]).flat()], config: { type: 'postgres', cluster: 'rel', postgres: section } };
    },
  },
  {
    name: 'zookeeper',
    place: () => {
      const cluster = `rel-${suffix()}`;
      return { args: ['-t', 'zookeeper', '-c', cluster, '-o', `zookeeper.connectString=${env.zookeeper!.connectString}`, '-o', 'zookeeper.openAcl=true'], config: { type: 'zookeeper', cluster, zookeeper: { connectString: env.zookeeper!.connectString, openAcl: true } } };
    },
  },
] as const;

describe.each(backends)('release on $name', ({ name, place }) => {
  it('where there is no registry: NOT_FOUND, exit 6, and none is created (no schema, no cluster znode)', async () => {
    const { args } = place();
    const r = await run(['release', 'nightly', '--yes', ...args]);
    expect(r.code, r.stderr).toBe(6);
    expect(r.stderr).toMatch(new RegExp(`^rollcall: error NOT_FOUND \\[${name}\\]: `));
    // Still nothing there: a read command finds no registry either (had release created one, it would list no locks, exit 0).
    const after = await run(['locks', ...args]);
    expect(after.code, after.stdout + after.stderr).toBe(6);
  });

  it('where the lock is held: released after the read-only look, the holder loses it', async () => {
    const { args, config } = place();
    const holder = await createRegistry({ ...config, identity: 'holder', lock: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 } } as never);
    opened.push(holder);
    const lock = await holder.lock('nightly', { timeoutMs: 10_000 });
    const r = await run(['release', 'nightly', '--yes', ...args]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`released lock nightly (fencing token ${lock.fencingToken}, held by holder.`);
    await waitFor(() => lock.signal.aborted, 15_000, 'the holder to lose its lock');
  });
});
