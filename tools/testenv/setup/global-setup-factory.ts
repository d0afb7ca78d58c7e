import { join } from 'node:path';
import { acquireLock } from '../process/lock.js';
import { testenvRoot } from '../env/paths.js';
import { down, up } from '../orchestrate.js';
import { SERVER_NAMES, type ServerName } from '../catalog.js';
import type { Backend } from '../servers/server.js';

/** A private instance of the environment: its own root and its own block of ports. */
export interface PrivateInstance {
  /** Data root, e.g. "/tmp/rollcall-testenv-etcd-faults". */
  root: string;
  /** First port of its block (every port is base + a fixed offset < 600), e.g. 26000. */
  portBase: number;
  /** Also a real node (a kubelet with containerd) beside kwok's, everything in a network namespace of its own. */
  realNode?: boolean;
  /** Leave it running after the run, for other packages' runs (a `down` with its root stops it). Default false. */
  keep?: boolean;
}

/**
 * The instance with a real node that the real-node suites of every package share: one
 * kubelet for all of them. Left running like the shared instance; `.ci/run` stops it.
 * `ROLLCALL_TESTENV_NODE_ROOT` / `ROLLCALL_TESTENV_NODE_PORT_BASE` move it (default
 * /tmp/rollcall-testenv-node, 24000), for a second checkout working beside the first.
 */
export const REAL_NODE_INSTANCE: PrivateInstance = {
  root: process.env.ROLLCALL_TESTENV_NODE_ROOT || '/tmp/rollcall-testenv-node',
  portBase: Number(process.env.ROLLCALL_TESTENV_NODE_PORT_BASE || 24000),
  realNode: true,
  keep: true,
};

export interface GlobalSetupOptions {
  /**
   * Run on a private instance instead of the shared one: for a package whose tests stop,
   * kill or restart servers, so that other packages' tests (which nx runs at the same
   * time against the shared instance) are not disturbed. The instance is stopped after
   * the run unless ROLLCALL_TESTENV_KEEP=1.
   */
  privateInstance?: PrivateInstance;
}

/** Longest wait for another package's run to finish with a server: a whole suite, milliseconds. */
const EXCLUSIVE_WAIT_MS = 60 * 60_000;

/**
 * A vitest global setup that brings `servers` up before any test file runs (idempotent,
 * a second or two when they already run). The shared instance is left running
 * afterwards: other packages' test runs may share it, and the next run starts warm.
 * Stop it with `npm run testenv -- down`.
 *
 * nx runs packages side by side, and a package's tests stop, restart and compact its
 * servers: so a run holds each of its servers (on a kept private instance, the whole
 * instance) from setup to teardown, and a second package that needs one waits for it.
 * Packages on different servers run at the same time.
 *
 * ```ts
 * // vitest.config.ts
 * export default defineConfig({ test: { globalSetup: ['@rollcall/tools/testenv/setup-etcd'] } });
 * ```
 */
export function createGlobalSetup(servers: readonly ServerName[], options: GlobalSetupOptions = {}): () => Promise<() => Promise<void>> {
  return async function setup() {
    const instance = options.privateInstance;
    if (instance) {
      // the test workers are forked after this and inherit these variables
      process.env.ROLLCALL_TESTENV_ROOT = instance.root;
      process.env.ROLLCALL_TESTENV_PORT_BASE = String(instance.portBase);
      if (instance.realNode) process.env.ROLLCALL_TESTENV_REAL_NODE = '1';
    }
    const releases: (() => void)[] = [];
    for (const name of heldBy(servers, instance)) releases.push(await acquireLock(join(testenvRoot(), 'in-use', name), EXCLUSIVE_WAIT_MS));
    const release = () => {
      for (const r of releases.reverse()) r();
    };
    try {
      await up(servers);
    } catch (error) {
      release();
      throw error;
    }
    return async () => {
      try {
        if (instance && !instance.keep && process.env.ROLLCALL_TESTENV_KEEP !== '1') await down();
      } finally {
        release();
      }
    };
  };
}

/**
 * What a run holds, in one order (no two runs wait on each other): its servers on the
 * shared instance (none named: all of them), a kept private instance whole, and nothing
 * on a private instance of its own.
 */
function heldBy(servers: readonly ServerName[], instance: PrivateInstance | undefined): string[] {
  if (instance) return instance.keep ? ['instance'] : [];
  return [...(servers.length > 0 ? servers : SERVER_NAMES)].sort();
}

/** The global setup of one backend, `@rollcall/tools/testenv/setup-<name>`: every server its descriptor offers. */
export function backendSetup(backend: Backend): () => Promise<() => Promise<void>> {
  return createGlobalSetup(backend.servers.map((s) => s.name as ServerName));
}

/** Server names from a comma-separated list such as ROLLCALL_TESTENV_SERVERS="etcd,mariadb". */
export function parseServerList(list: string | undefined): ServerName[] {
  return (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as ServerName[];
}
