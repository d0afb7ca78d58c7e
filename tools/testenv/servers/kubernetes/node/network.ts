import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toolsPackageDir } from '../../../env/paths.js';
import { daemonPid } from '../../../process/daemon.js';
import { TestenvError } from '../../../env/errors.js';
import { isPortFree } from '../../../process/ports.js';
import type { Unit } from '../../../process/unit.js';
import { KUBERNETES_SERVICE_IP, KUBERNETES_SERVICE_PORT, NODE_IP, nodeDir } from './layout.js';

/**
 * The instance's own network namespace: the control plane and the real node run inside
 * it, so nothing they or their pods send can leave it (it has no route out), and the
 * machine's namespace gains no address, route or rule. The unit that holds it is the
 * in-namespace half of the forwarder; the namespace ends with the last process in it.
 */
export const NETNS_UNIT = 'kubernetes-netns';
export const HOST_FORWARDER_UNIT = 'kubernetes-forwarder';

/** An interface (a bridge without ports: this kernel has no dummy driver) that carries the node's address and the `kubernetes` Service address. */
const NODE_INTERFACE = 'rollcall0';

const forwarderScript = () => join(toolsPackageDir(), 'testenv', 'servers', 'kubernetes', 'node', 'forwarder.mjs');
const forwarderConfig = () => join(nodeDir(), 'forwarder.json');
const socketDir = () => join(nodeDir(), 'forward');

/** The pid whose network namespace is the instance's (the in-namespace forwarder). */
export function netnsHolderPid(): number {
  const pid = daemonPid(NETNS_UNIT);
  if (pid === undefined) throw new TestenvError(`${NETNS_UNIT} is not running: the instance's network namespace is gone; run down, then up`);
  return pid;
}

/** The same unit, run inside the instance's network namespace; its ports are reached through the forwarder. */
export function inNodeNetwork(unit: Unit): Unit {
  return {
    ...unit,
    // its ports are the namespace's; on the machine the host forwarder holds them
    ports: [],
    command() {
      const inner = unit.command();
      return { ...inner, command: 'nsenter', args: [`--target=${netnsHolderPid()}`, '--net', '--', inner.command, ...inner.args] };
    },
  };
}

/**
 * The namespace holder: a new network namespace with loopback up and one portless bridge
 * for the node's address and the `kubernetes` Service's, then the in-namespace forwarder:
 * each forwarded port as a unix socket for the host half, and the Service address's port
 * 443 to the API server, as kube-proxy would route it (no endpoints, no iptables).
 */
export function netnsUnit(forwardedPorts: () => number[], apiserverPort: () => number): Unit {
  return {
    name: NETNS_UNIT,
    ports: [],
    startTimeoutMs: 15_000,
    stopGraceMs: 5_000,
    async prepare() {
      mkdirSync(socketDir(), { recursive: true, mode: 0o700 });
      const config = {
        socketDir: socketDir(),
        ports: forwardedPorts(),
        listeners: [{ host: KUBERNETES_SERVICE_IP, port: KUBERNETES_SERVICE_PORT, targetPort: apiserverPort() }],
      };
      writeFileSync(forwarderConfig(), JSON.stringify(config, null, 2) + '\n');
    },
    command() {
      const setup = [
        'set -e',
        'ip link set lo up',
        `ip link add ${NODE_INTERFACE} type bridge`,
        `ip addr add ${NODE_IP}/32 dev ${NODE_INTERFACE}`,
        `ip addr add ${KUBERNETES_SERVICE_IP}/32 dev ${NODE_INTERFACE}`,
        `ip link set ${NODE_INTERFACE} up`,
        `exec "${process.execPath}" "${forwarderScript()}" netns "${forwarderConfig()}"`,
      ].join('\n');
      return { command: 'unshare', args: ['--net', '--', 'sh', '-c', setup] };
    },
    async isHealthy() {
      const pid = daemonPid(NETNS_UNIT);
      return pid !== undefined && forwardedPorts().every((p) => socketExists(p));
    },
  };
}

/** The host half: each forwarded port on the machine's 127.0.0.1, to its socket. */
export function hostForwarderUnit(forwardedPorts: () => number[]): Unit {
  return {
    name: HOST_FORWARDER_UNIT,
    ports: forwardedPorts(),
    startTimeoutMs: 15_000,
    stopGraceMs: 5_000,
    async prepare() {},
    command() {
      return { command: process.execPath, args: [forwarderScript(), 'host', forwarderConfig()] };
    },
    async isHealthy() {
      return daemonPid(HOST_FORWARDER_UNIT) !== undefined && (await Promise.all(forwardedPorts().map((p) => isListening(p)))).every(Boolean);
    },
  };
}

function socketExists(port: number): boolean {
  try {
    return statSync(join(socketDir(), `${port}.sock`)).isSocket();
  } catch {
    return false;
  }
}

async function isListening(port: number): Promise<boolean> {
  return !(await isPortFree(port));
}
