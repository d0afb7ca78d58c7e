import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unitDir } from '../../env/paths.js';
import { zookeeperMode } from './four-letter-word.js';
import { ensureZookeeperTls, secureClientPortConfig } from './tls.js';
import type { Unit } from '../../process/unit.js';
import { isPortFree } from '../../process/ports.js';

/**
 * Debian's zookeeper package: the server jar, plus log4j and its slf4j binding for logs, and
 * the Netty codec and resolver jars its manifest leaves out (the TLS port's Netty factory needs them).
 */
const CLASSPATH = ['zookeeper', 'slf4j-log4j12', 'log4j-1.2', 'netty-codec', 'netty-resolver'].map((jar) => `/usr/share/java/${jar}.jar`).join(':');

export interface QuorumPeer {
  id: number;
  quorumPort: number;
  electionPort: number;
}

export interface ZookeeperUnitOptions {
  name: string;
  clientPort: number;
  /** Also a TLS port (`secureClientPort`, Netty), with a CA and certificates made at setup. */
  secureClientPort?: number;
  /** Set for an ensemble member: its own id and every peer (itself included). */
  ensemble?: { id: number; peers: QuorumPeer[] };
}

const LOG4J = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t:%C{1}@%L] - %m%n
`;

/**
 * A ZooKeeper server run in the foreground (QuorumPeerMain, as Debian's init script does)
 * with its own config: loopback only, admin server off, four-letter words srvr/ruok/mntr.
 */
export function zookeeperUnit(options: ZookeeperUnitOptions): Unit {
  const dir = unitDir(options.name);
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'zoo.cfg');
  const ensemble = options.ensemble;
  const ports = [options.clientPort];
  if (options.secureClientPort !== undefined) ports.push(options.secureClientPort);
  if (ensemble) {
    const self = ensemble.peers.find((p) => p.id === ensemble.id)!;
    ports.push(self.quorumPort, self.electionPort);
  }
  return {
    name: options.name,
    ports,
    startTimeoutMs: 60_000,
    async prepare() {
      mkdirSync(dataDir, { recursive: true });
      const lines = [
        // a short tick lets tests use session timeouts down to 2 s and speeds up elections
        'tickTime=1000',
        'initLimit=10',
        'syncLimit=5',
        `dataDir=${dataDir}`,
        `clientPort=${options.clientPort}`,
        'clientPortAddress=127.0.0.1',
        'admin.enableServer=false',
        '4lw.commands.whitelist=srvr,ruok,mntr,stat,conf',
        'maxClientCnxns=0',
        'autopurge.snapRetainCount=3',
        'autopurge.purgeInterval=1',
      ];
      if (options.secureClientPort !== undefined) lines.push(...secureClientPortConfig(options.secureClientPort, await ensureZookeeperTls(dir)));
      if (ensemble) {
        for (const peer of ensemble.peers) lines.push(`server.${peer.id}=127.0.0.1:${peer.quorumPort}:${peer.electionPort}`);
        const myid = join(dataDir, 'myid');
        if (!existsSync(myid)) writeFileSync(myid, `${ensemble.id}\n`);
      }
      writeFileSync(configFile, lines.join('\n') + '\n');
      writeFileSync(join(dir, 'log4j.properties'), LOG4J);
    },
    command() {
      return {
        command: '/usr/bin/java',
        args: [
          '-Xmx256m',
          `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`,
          '-Dzookeeper.jmx.log4j.disable=true',
          '-cp',
          CLASSPATH,
          'org.apache.zookeeper.server.quorum.QuorumPeerMain',
          configFile,
        ],
        cwd: dir,
      };
    },
    async isHealthy() {
      // an ensemble member answers srvr without a Mode until a quorum has elected a leader
      const mode = await zookeeperMode('127.0.0.1', options.clientPort);
      const serving = ensemble ? mode === 'leader' || mode === 'follower' : mode === 'standalone';
      // the TLS port opens after the plain one answers; a server started before it was configured never opens it
      return serving && (options.secureClientPort === undefined || !(await isPortFree(options.secureClientPort)));
    },
  };
}
