import { ensureDebianPackages } from '../install/debian-packages.js';
import { debianPackageVersion } from '../install/debian-version.js';
import { portsOf } from '../process/ports.js';
import { startUnits } from '../process/unit.js';
import { defineBackend, defineServer, offsetRange } from './server.js';
import { zookeeperUnit } from './zookeeper/unit.js';
import { zookeeperTlsFiles } from './zookeeper/tls.js';
import { unitDir } from '../env/paths.js';

export interface ZookeeperEnv {
  /** Client connect string, e.g. "127.0.0.1:21181". */
  connectString: string;
  host: string;
  port: number;
  version: string;
  /** The same server's `secureClientPort` (TLS; the server requires a client certificate). */
  tls: {
    /** e.g. "127.0.0.1:21182". */
    connectString: string;
    port: number;
    /** PEM: the CA of the server's certificate. */
    caFile: string;
    /** PEM: a client certificate and key the server accepts. */
    certFile: string;
    keyFile: string;
    /** PEM: a CA that signed nothing the server shows. */
    wrongCaFile: string;
  };
}

export interface ZookeeperEnsembleMember {
  /** ZooKeeper server id (myid), 1..3. */
  id: number;
  /** Unit name for the fault helpers, e.g. "zookeeper-ensemble-2". */
  unit: string;
  host: string;
  clientPort: number;
  quorumPort: number;
  electionPort: number;
}

export interface ZookeeperEnsembleEnv {
  /** All three members, e.g. "127.0.0.1:21281,127.0.0.1:21282,127.0.0.1:21283". */
  connectString: string;
  members: ZookeeperEnsembleMember[];
  version: string;
}

const MEMBER_IDS = [1, 2, 3];

/** Offsets from the instance's port base; the ensemble's are the first of three (members 1..3). */
const PORTS = { standalone: 181, standaloneSecure: 182, ensembleClient: 281, ensembleQuorum: 291, ensembleElection: 294 };
const port = portsOf(PORTS);

/** A standalone ZooKeeper from Debian's zookeeper package, also on a TLS port. */
export const zookeeper = defineServer({
  name: 'zookeeper',
  envKey: 'zookeeper',
  units: () => [zookeeperUnit({ name: 'zookeeper', clientPort: port('standalone'), secureClientPort: port('standaloneSecure') })],
  install: () => ensureDebianPackages(['zookeeper']),
  up: (): Promise<void> => startUnits(zookeeper.units()),
  async describe(): Promise<ZookeeperEnv> {
    const p = port('standalone');
    const securePort = port('standaloneSecure');
    const { caFile, certFile, keyFile, wrongCaFile } = zookeeperTlsFiles(unitDir('zookeeper'));
    return {
      connectString: `127.0.0.1:${p}`,
      host: '127.0.0.1',
      port: p,
      version: debianPackageVersion('zookeeper'),
      tls: { connectString: `127.0.0.1:${securePort}`, port: securePort, caFile, certFile, keyFile, wrongCaFile },
    };
  },
});

/** The members of the 3-node ensemble, with their ports and unit names. */
export function ensembleMembers(): ZookeeperEnsembleMember[] {
  return MEMBER_IDS.map((id) => ({
    id,
    unit: `zookeeper-ensemble-${id}`,
    host: '127.0.0.1',
    clientPort: port('ensembleClient', id - 1),
    quorumPort: port('ensembleQuorum', id - 1),
    electionPort: port('ensembleElection', id - 1),
  }));
}

/** A 3-node ZooKeeper ensemble on loopback ports, for leader-failure tests. */
export const zookeeperEnsemble = defineServer({
  name: 'zookeeper-ensemble',
  envKey: 'zookeeperEnsemble',
  units() {
    const members = ensembleMembers();
    const peers = members.map((m) => ({ id: m.id, quorumPort: m.quorumPort, electionPort: m.electionPort }));
    return members.map((m) => zookeeperUnit({ name: m.unit, clientPort: m.clientPort, ensemble: { id: m.id, peers } }));
  },
  install: () => ensureDebianPackages(['zookeeper']),
  up: (): Promise<void> => startUnits(zookeeperEnsemble.units()),
  async describe(): Promise<ZookeeperEnsembleEnv> {
    const members = ensembleMembers();
    return {
      connectString: members.map((m) => `${m.host}:${m.clientPort}`).join(','),
      members,
      version: debianPackageVersion('zookeeper'),
    };
  },
});

/** The ZooKeeper backend: a standalone server and a 3-node ensemble, from Debian's package (run by java). */
export const zookeeperBackend = defineBackend({
  name: 'zookeeper',
  servers: [zookeeper, zookeeperEnsemble],
  portOffsets: [
    PORTS.standalone,
    PORTS.standaloneSecure,
    ...[PORTS.ensembleClient, PORTS.ensembleQuorum, PORTS.ensembleElection].flatMap((first) => offsetRange(first, MEMBER_IDS.length)),
  ],
  executables: ['java'],
});
