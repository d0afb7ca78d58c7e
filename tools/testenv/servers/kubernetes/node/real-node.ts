import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { execFileSync } from 'node:child_process';
import { ensureDebianPackages } from '../../../install/debian-packages.js';
import { startUnits, type Unit } from '../../../process/unit.js';
import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../../../process/server-wait.js';
import { unitLogFile } from '../../../env/paths.js';
import { TestenvError } from '../../../env/errors.js';
import { getJson } from '../admin-client.js';
import { NODE_PACKAGES, containerdSocket, containerdUnit, ctr } from './containerd.js';
import { kubeletUnit, podLogsDir, KUBELET_UNIT } from './kubelet.js';
import { makeBaseImages, pauseImage, runtimeImage } from './images.js';
import { REAL_NODE_LABEL, REAL_NODE_NAME, REAL_NODE_TAINT, cgroupRoot, nodeDir } from './layout.js';
import type { OciArchive } from './oci-image.js';
import { processesUsingRoot } from '../../../process/strays.js';

/** The real node of an instance that has one: a kubelet with containerd, in the instance's network namespace. */
export interface RealNodeEnv {
  name: string;
  /** nodeSelector that puts a pod on it. */
  label: { key: string; value: string };
  /** The taint a pod must tolerate to run there. */
  taint: { key: string; value: string; effect: string };
  /** Node.js and the built workspace packages under /app (`node /app/…`); use imagePullPolicy Never. */
  runtimeImage: string;
  pauseImage: string;
  /** containerd's socket (`ctr --address … -n k8s.io`). */
  containerdSocket: string;
  podLogsDir: string;
  /** The kubelet's cgroup root: every pod's cgroups are below it. */
  cgroupRoot: string;
}

const imagesRecord = () => join(nodeDir(), 'images', 'imported.json');

/** The node's processes, after the control plane's. */
export const nodeUnits = (): Unit[] => [containerdUnit(), kubeletUnit()];

export async function installNode(): Promise<void> {
  assertCanRunContainers();
  await ensureDebianPackages(NODE_PACKAGES);
  maskMachineContainerd();
}

/**
 * What a real node needs besides the Go builds and the workspace's packages: its Debian
 * packages, the pause image, and the base images an application image starts FROM. Each
 * step is cached, so on a warm machine this checks and returns; on a cold one it runs
 * beside the Go build (`testenv install-node`) instead of inside the first real-node suite.
 */
export async function prepareNode(): Promise<void> {
  await installNode();
  await pauseImage();
  await makeBaseImages();
}

/**
 * A machine that cannot run containers fails here with one line naming what is missing,
 * never with a kubelet's log or a silent skip.
 */
function assertCanRunContainers(): void {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root (containerd and the kubelet need it)');
  if (!existsSync('/sys/fs/cgroup/pids') && !existsSync('/sys/fs/cgroup/cgroup.controllers')) missing.push('a cgroup filesystem at /sys/fs/cgroup');
  if (!readFileSync('/proc/filesystems', 'utf8').includes('overlay')) missing.push('the overlay filesystem in the kernel');
  for (const tool of ['unshare', 'nsenter', 'ip', 'gcc', 'tar']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      missing.push(`the ${tool} command`);
    }
  }
  if (missing.length > 0) throw new TestenvError(`this machine cannot run the real node: missing ${missing.join(', ')}`);
}

/**
 * Debian's containerd package enables a containerd.service for the whole machine. Where
 * systemd runs, mask it: ours has its own socket, root and state.
 */
function maskMachineContainerd(): void {
  if (!existsSync('/run/systemd/system')) return;
  try {
    execFileSync('systemctl', ['mask', '--now', 'containerd.service'], { stdio: 'ignore' });
  } catch {
    // no such unit: nothing to mask
  }
}

/** Starts containerd, imports the images (only those it lacks), starts the kubelet, waits for a Ready node. */
export async function upNode(): Promise<void> {
  const [pause, runtime] = [await pauseImage(), await runtimeImage()];
  await startUnits([containerdUnit()]);
  await importImages([pause, runtime]);
  mkdirSync(dirname(imagesRecord()), { recursive: true });
  writeFileSync(imagesRecord(), JSON.stringify({ pause: pause.ref, runtime: runtime.ref }));
  await startUnits([kubeletUnit()]);
  await waitFor(
    async () => {
      const node = await getJson<{ status?: { conditions?: { type: string; status: string }[] } }>(`/api/v1/nodes/${REAL_NODE_NAME}`);
      return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    },
    90_000,
    serverWait({ what: `the real node ${REAL_NODE_NAME} to be Ready`, logFile: unitLogFile(KUBELET_UNIT) }),
  );
}

async function importImages(images: OciArchive[]): Promise<void> {
  const present = new Set((await ctr(['images', 'ls', '-q'])).split('\n').map((l) => l.trim()));
  for (const image of images) {
    if (present.has(image.ref)) continue;
    try {
      await ctr(['images', 'import', image.file]);
    } catch (error) {
      throw new TestenvError(`importing ${image.ref} into containerd failed: ${(error as Error).message}`, { cause: error });
    }
  }
}

export function describeNode(): RealNodeEnv {
  const images = existsSync(imagesRecord()) ? (JSON.parse(readFileSync(imagesRecord(), 'utf8')) as { pause: string; runtime: string }) : { pause: '', runtime: '' };
  return {
    name: REAL_NODE_NAME,
    label: { ...REAL_NODE_LABEL },
    taint: { ...REAL_NODE_TAINT },
    runtimeImage: images.runtime,
    pauseImage: images.pause,
    containerdSocket: containerdSocket(),
    podLogsDir: podLogsDir(),
    cgroupRoot: cgroupRoot(),
  };
}

/** The node's cgroup directories in every v1 hierarchy (and the v2 one, where mounted), deepest first. */
export function nodeCgroups(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name));
    found.push(dir);
  };
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    const dir = join('/sys/fs/cgroup', hierarchy, cgroupRoot());
    if (existsSync(dir)) walk(dir);
  }
  return found;
}

function pidsIn(cgroups: string[]): number[] {
  const pids = new Set<number>();
  for (const dir of cgroups) {
    try {
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.add(Number(line));
    } catch {
      // removed meanwhile
    }
  }
  return [...pids];
}

/**
 * After the node's units stopped: kills what is left in its cgroups (containers whose
 * shim outlived containerd) and removes the cgroups, so `down` leaves nothing behind.
 */
export async function cleanUpNode(): Promise<void> {
  // containerd's shims run in sessions of their own: stopping containerd leaves them
  for (const shim of processesUsingRoot(new Set(['containerd-shim-runc-v2'])).filter((p) => /(^|\/)containerd-shim[^ ]* /.test(p.commandLine))) {
    try {
      process.kill(shim.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  const deadline = Date.now() + 15_000;
  for (;;) {
    const pids = pidsIn(nodeCgroups());
    if (pids.length === 0) break;
    if (Date.now() > deadline) throw new TestenvError(`processes left in the node's cgroups after down: ${pids.join(', ')}`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await delay(100);
  }
  for (const dir of nodeCgroups()) {
    try {
      rmdirSync(dir);
    } catch (error) {
      throw new TestenvError(`cannot remove the node's cgroup ${dir}: ${(error as Error).message}`, { cause: error });
    }
  }
}
