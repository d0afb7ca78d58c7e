import { ETCD, componentVersion } from '../go-components.js';
import { ensureBuilt } from '../go-build.js';
import { port } from '../ports.js';
import { startUnits } from '../unit.js';
import type { EtcdEnv } from '../env-file.js';
import type { Server } from './server.js';
import { etcdUnit } from './etcd-unit.js';

/** etcd built from go.etcd.io/etcd/server/v3, no authentication: for the etcd backend. */
export const etcd: Server = {
  name: 'etcd',
  envKey: 'etcd',
  units: () => [etcdUnit({ name: 'etcd', clientPort: port('etcdClient'), peerPort: port('etcdPeer') })],
  install: async () => void (await ensureBuilt(ETCD)),
  up() {
    return startUnits(etcd.units());
  },
  async describe(): Promise<EtcdEnv> {
    return { endpoints: [`http://127.0.0.1:${port('etcdClient')}`], version: componentVersion(ETCD) };
  },
};
