import { down, status, up, currentEnvFile } from './orchestrate.js';
import { restartServer, startServer, stopServer } from './faults/faults.js';
import { zookeeperEnsembleLeader, killZookeeperEnsembleLeader } from './servers/zookeeper/leader.js';
import { GO_COMPONENTS, SERVERS, SERVER_NAMES } from './catalog.js';
import { compactServer, type CompactableServer } from './faults/compaction.js';
import { envFilePath } from './env/paths.js';
import { ensureAllBuilt } from './install/go-build.js';
import { prepareNode } from './servers/kubernetes/node/real-node.js';

/** The servers whose descriptor can discard their change history. */
const COMPACTABLE = SERVERS.filter((s) => s.compact).map((s) => s.name);

const USAGE = `usage: npm run testenv -- <command> [names...]
  up [server...]        start servers (all by default), write the env file
  build [component...]  build (or find in the cache) every Go binary, or those components' (${GO_COMPONENTS.map((c) => c.name).join(', ')}), start nothing
  install-node          install what a real node needs besides the Go builds (Debian packages, pause and base
                        images), start nothing; a failure is reported and left to the real-node setup
  down [server...]      stop servers (all by default), leave no process behind
  status                every unit: pid and health
  env                   print the env file path
  stop|start|restart <server-or-unit>   fault injection (e.g. kube-apiserver, zookeeper-ensemble-2)
  leader                the ZooKeeper ensemble member that leads
  kill-leader           SIGKILL the ZooKeeper ensemble leader
  compact ${COMPACTABLE.join('|')}   discard the change history up to now (a watch from before gets "too old")
servers: ${SERVER_NAMES.join(', ')}`;

async function main(argv: string[]): Promise<void> {
  const [command, ...names] = argv;
  switch (command) {
    case 'up': {
      const file = await up(names);
      console.log(file);
      return;
    }
    case 'build': {
      const unknown = names.filter((n) => !GO_COMPONENTS.some((c) => c.name === n));
      if (unknown.length > 0) throw new Error(`unknown Go component ${unknown.join(', ')}; known: ${GO_COMPONENTS.map((c) => c.name).join(', ')}`);
      const components = names.length === 0 ? GO_COMPONENTS : GO_COMPONENTS.filter((c) => names.includes(c.name));
      for (const dir of await ensureAllBuilt(components)) console.log(dir);
      return;
    }
    case 'install-node':
      // ahead of time only: the real-node setup installs the same and fails there, naming what is missing
      await prepareNode().catch((error: unknown) => console.error(`[testenv] install-node: ${error instanceof Error ? error.message : String(error)} (the real-node setup tries again)`));
      return;
    case 'down':
      await down(names);
      return;
    case 'status': {
      const rows = await status();
      for (const r of rows) {
        console.log(`${r.unit.padEnd(26)} ${r.pid === undefined ? 'stopped' : `pid ${r.pid}`.padEnd(12)} ${r.pid === undefined ? '' : r.healthy ? 'healthy' : 'NOT HEALTHY'}`);
      }
      const env = currentEnvFile();
      console.log(env ? `env file: ${envFilePath()}` : 'no env file');
      return;
    }
    case 'env':
      console.log(envFilePath());
      return;
    case 'stop':
    case 'start':
    case 'restart': {
      if (names.length === 0) throw new Error(`${command} needs a server or unit name`);
      const action = { stop: stopServer, start: startServer, restart: restartServer }[command];
      for (const name of names) await action(name);
      return;
    }
    case 'leader': {
      const leader = await zookeeperEnsembleLeader();
      console.log(leader ? `${leader.unit} (id ${leader.id}, port ${leader.clientPort})` : 'no leader');
      return;
    }
    case 'kill-leader': {
      const killed = await killZookeeperEnsembleLeader();
      console.log(`killed ${killed.unit}`);
      return;
    }
    case 'compact': {
      if (names.length === 0) throw new Error(`compact needs a server: ${COMPACTABLE.join(' or ')}`);
      for (const name of names) {
        const { revision } = await compactServer(name as CompactableServer);
        console.log(`compacted ${name}: every revision below ${revision} is gone`);
      }
      return;
    }
    default:
      console.error(USAGE);
      process.exitCode = command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
