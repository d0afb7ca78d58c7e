import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Unit } from '../../../process/unit.js';
import { netnsHolderPid } from './network.js';
import { POD_SUBNET, nodeDir } from './layout.js';
import { pauseImage } from './images.js';

const run = promisify(execFile);

export const CONTAINERD_UNIT = 'kubernetes-containerd';

/**
 * Debian's packages: containerd 1.6 (and ctr), runc, the CNI plugins; and buildah, which
 * builds the application image's recipe (deploy/image) without a daemon for the node to run.
 */
export const NODE_PACKAGES = ['containerd', 'runc', 'containernetworking-plugins', 'buildah'];
export const CNI_BIN_DIR = '/usr/lib/cni';

export const containerdDir = () => join(nodeDir(), 'containerd');
/** containerd's socket: the kubelet's runtime endpoint and ctr's address. */
export const containerdSocket = () => join(containerdDir(), 'containerd.sock');
const configFile = () => join(containerdDir(), 'config.toml');
const cniConfDir = () => join(nodeDir(), 'cni', 'net.d');
const sysctlDir = () => join(nodeDir(), 'sysctl');

/**
 * Host-wide kernel settings the kubelet writes at start (setupKernelTunables). In the
 * node's mount namespace each is shadowed by a file of our own, so those writes land
 * there and the machine's values never change, even when a run is killed before `down`.
 */
export const SHADOWED_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

function configToml(sandboxImage: string): string {
  const dir = containerdDir();
  return `version = 2
root = "${join(dir, 'root')}"
state = "${join(dir, 'state')}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${containerdSocket()}"

[ttrpc]
  address = "${join(dir, 'containerd.ttrpc.sock')}"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(dir, 'opt')}"

[plugins."io.containerd.grpc.v1.cri"]
  # built locally and imported: nothing can be pulled from a registry here
  sandbox_image = "${sandboxImage}"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails to start
  restrict_oom_score_adj = true
  # pod network namespaces are mounted in containerd's own state, not /run/netns
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    discard_unpacked_layers = false
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${cniConfDir()}"
    max_conf_num = 1
`;
}

/** One bridge inside the instance's namespace; pods route to the node (and no further) through it. */
function cniConfig(): object {
  return {
    cniVersion: '1.0.0',
    name: 'rollcall-pods',
    plugins: [
      {
        type: 'bridge',
        bridge: 'rollcall-br0',
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_SUBNET }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: join(nodeDir(), 'cni', 'ipam') },
      },
      { type: 'loopback' },
    ],
  };
}

/**
 * containerd in the instance's network namespace and a mount namespace of its own
 * (private: its overlay and pod-network mounts never reach the machine, and go with its
 * last process), with the kernel settings the kubelet writes shadowed. The kubelet
 * joins this mount namespace, so both see the same volumes.
 */
export function containerdUnit(): Unit {
  return {
    name: CONTAINERD_UNIT,
    ports: [],
    startTimeoutMs: 60_000,
    stopGraceMs: 10_000,
    async prepare() {
      mkdirSync(containerdDir(), { recursive: true, mode: 0o700 });
      mkdirSync(cniConfDir(), { recursive: true });
      mkdirSync(sysctlDir(), { recursive: true });
      writeFileSync(configFile(), configToml((await pauseImage()).ref));
      writeFileSync(join(cniConfDir(), '10-rollcall.conflist'), JSON.stringify(cniConfig(), null, 2) + '\n');
      for (const key of SHADOWED_SYSCTLS) {
        const file = join(sysctlDir(), key.replaceAll('/', '.'));
        // the kubelet reads before it writes: start from the machine's own value
        if (!existsSync(file)) writeFileSync(file, readFileSync(`/proc/sys/${key}`, 'utf8'));
      }
    },
    command() {
      const binds = SHADOWED_SYSCTLS.map((key) => `mount --bind "${join(sysctlDir(), key.replaceAll('/', '.'))}" /proc/sys/${key}`);
      const script = ['set -e', ...binds, `exec containerd --config "${configFile()}"`].join('\n');
      return {
        command: 'nsenter',
        args: [`--target=${netnsHolderPid()}`, '--net', '--', 'unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', script],
      };
    },
    async isHealthy() {
      if (!existsSync(containerdSocket())) return false;
      try {
        await ctr(['version']);
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** Runs ctr against this instance's containerd, in the kubelet's namespace k8s.io. */
export async function ctr(args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const { stdout } = await run('ctr', ['--address', containerdSocket(), '--namespace', 'k8s.io', ...args], {
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}
