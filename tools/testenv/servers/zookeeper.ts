import { ensureDebianPackages } from '../debian-packages.js';
import { port } from '../ports.js';
import { startUnits } from '../unit.js';
import type { ZookeeperEnv } from '../env-file.js';
import { debianPackageVersion } from './debian-version.js';
import type { Server } from './server.js';
import { zookeeperUnit } from './zookeeper-unit.js';

/** A standalone ZooKeeper from Debian's zookeeper package. */
export const zookeeper: Server = {
  name: 'zookeeper',
  envKey: 'zookeeper',
  units: () => [zookeeperUnit({ name: 'zookeeper', clientPort: port('zookeeper') })],
  install: () => ensureDebianPackages(['zookeeper']),
  up() {
    return startUnits(zookeeper.units());
  },
  async describe(): Promise<ZookeeperEnv> {
    const p = port('zookeeper');
    return { connectString: `127.0.0.1:${p}`, host: '127.0.0.1', port: p, version: debianPackageVersion('zookeeper') };
  },
};
