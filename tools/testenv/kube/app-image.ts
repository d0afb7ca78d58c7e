import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestenvError } from '../env/errors.js';
import { runProcess } from '../process/run-process.js';
import { monotonicMs } from '../measure/monotonic.js';
import { realNode } from './real-node-pods.js';
import { makeBaseImages } from '../servers/kubernetes/node/images.js';

/** What building an application image took, for a test to report. */
export interface AppImage {
  /** The name containerd knows it by (pods use it with imagePullPolicy Never). */
  ref: string;
  /** `tools/image/node-base`: the base images made, or found by their content key. Milliseconds. */
  baseMs: number;
  /** `buildah bud` of the Dockerfile. Milliseconds. */
  buildMs: number;
  /** Export and `ctr images import` into the real node's containerd. Milliseconds. */
  importMs: number;
  /** The image's size: its docker-archive, every layer uncompressed. Bytes. */
  sizeBytes: number;
}

async function run(step: string, command: string, args: string[], options: { cwd?: string; timeoutMs: number }): Promise<string> {
  const r = await runProcess(command, args, { cwd: options.cwd, env: process.env, timeoutMs: options.timeoutMs });
  if (r.code !== 0) throw new TestenvError(`${step} failed (${command} ${args.join(' ')}: exit ${r.code ?? r.signal})\n${(r.stdout + r.stderr).slice(-4000)}`);
  return r.stdout;
}

/**
 * Builds `context` with its Dockerfile as a user would — `buildah bud`, no network
 * (`--network none`), FROM the base images `tools/image/node-base` makes from this
 * repository's Node.js — and imports the result into the real node's containerd as `ref`.
 */
export async function buildAppImage(context: string, ref: string): Promise<AppImage> {
  const t0 = monotonicMs();
  await makeBaseImages();
  const t1 = monotonicMs();
  await run('buildah bud', 'buildah', ['bud', '--quiet', '--network', 'none', '--layers', '-t', ref, '.'], { cwd: context, timeoutMs: 600_000 });
  const t2 = monotonicMs();
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-app-image-'));
  let sizeBytes: number;
  try {
    const archive = join(dir, 'image.tar');
    await run('buildah push', 'buildah', ['push', '--quiet', ref, `docker-archive:${archive}:${ref}`], { timeoutMs: 300_000 });
    sizeBytes = statSync(archive).size;
    await run('ctr images import', 'ctr', ['--address', realNode().containerdSocket, '--namespace', 'k8s.io', 'images', 'import', archive], { timeoutMs: 300_000 });
    // the build stage and an earlier build of `ref` are left untagged: without this, buildah's storage grows by both every run
    await run('buildah rmi --prune', 'buildah', ['rmi', '--prune'], { timeoutMs: 120_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { ref, baseMs: t1 - t0, buildMs: t2 - t1, importMs: monotonicMs() - t2, sizeBytes };
}
