import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { unitDir } from '../../env/paths.js';
import { httpOk } from '../../process/http-probe.js';
import type { GoComponent } from '../../install/go-components.js';
import { binaryPath } from '../../install/go-build.js';
import type { Unit } from '../../process/unit.js';

/** etcd and etcdctl, built from the module pinned in tools/go/etcd (the Kubernetes control plane's etcd too). */
export const ETCD: GoComponent = {
  name: 'etcd',
  module: 'etcd',
  versionOf: 'go.etcd.io/etcd/server/v3',
  binaries: { 'go.etcd.io/etcd/server/v3': 'etcd', 'go.etcd.io/etcd/etcdctl/v3': 'etcdctl' },
};

export interface EtcdUnitOptions {
  name: string;
  clientPort: number;
  peerPort: number;
}

/** A single-member etcd cluster on loopback, plain HTTP, data under its unit directory. */
export function etcdUnit(options: EtcdUnitOptions): Unit {
  const client = `http://127.0.0.1:${options.clientPort}`;
  const peer = `http://127.0.0.1:${options.peerPort}`;
  const dataDir = join(unitDir(options.name), 'data');
  return {
    name: options.name,
    ports: [options.clientPort, options.peerPort],
    startTimeoutMs: 30_000,
    async prepare() {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    },
    command() {
      return {
        command: binaryPath(ETCD, 'etcd'),
        args: [
          `--name=${options.name}`,
          `--data-dir=${dataDir}`,
          `--listen-client-urls=${client}`,
          `--advertise-client-urls=${client}`,
          `--listen-peer-urls=${peer}`,
          `--initial-advertise-peer-urls=${peer}`,
          `--initial-cluster=${options.name}=${peer}`,
          '--initial-cluster-state=new',
          `--initial-cluster-token=${options.name}`,
          '--log-outputs=stderr',
          '--log-level=warn',
          // tests compact and watch from old revisions; keep history unless asked
          '--auto-compaction-retention=0',
        ],
      };
    },
    // /readyz (etcd 3.6) answers 200 once the member serves linearizable reads
    isHealthy: () => httpOk(`${client}/readyz`),
  };
}
