import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { unitDir } from '../paths.js';
import { httpOk } from '../http-probe.js';
import { ETCD } from '../go-components.js';
import { binaryPath } from '../go-build.js';
import type { Unit } from '../unit.js';

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
