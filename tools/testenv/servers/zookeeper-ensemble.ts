import { ensureDebianPackages } from '../debian-packages.js';
import { port } from '../ports.js';
import { startUnits } from '../unit.js';
import type { ZookeeperEnsembleEnv, ZookeeperEnsembleMember } from '../env-file.js';
import { debianPackageVersion } from './debian-version.js';
import type { Server } from './server.js';
import { zookeeperUnit } from './zookeeper-unit.js';

const MEMBER_IDS = [1, 2, 3];

/** The members of the 3-node ensemble, with their ports and unit names. */
export function ensembleMembers(): ZookeeperEnsembleMember[] {
  return MEMBER_IDS.map((id) => ({
    id,
    unit: `zookeeper-ensemble-${id}`,
    host: '127.0.0.1',
    clientPort: port('zookeeperEnsembleClient', id - 1),
    quorumPort: port('zookeeperEnsembleQuorum', id - 1),
    electionPort: port('zookeeperEnsembleElection', id - 1),
  }));
}

/** A 3-node ZooKeeper ensemble on loopback ports, for leader-failure tests. */
export const zookeeperEnsemble: Server = {
  name: 'zookeeper-ensemble',
  envKey: 'zookeeperEnsemble',
  units() {
    const members = ensembleMembers();
    const peers = members.map((m) => ({ id: m.id, quorumPort: m.quorumPort, electionPort: m.electionPort }));
    return members.map((m) => zookeeperUnit({ name: m.unit, clientPort: m.clientPort, ensemble: { id: m.id, peers } }));
  },
  install: () => ensureDebianPackages(['zookeeper']),
  up() {
    return startUnits(zookeeperEnsemble.units());
  },
  async describe(): Promise<ZookeeperEnsembleEnv> {
    const members = ensembleMembers();
    return {
      connectString: members.map((m) => `${m.host}:${m.clientPort}`).join(','),
      members,
      version: debianPackageVersion('zookeeper'),
    };
  },
};
