import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAllYaml, type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import { createRegistry, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { buildAppImage, KubeAdmin, monotonicMs, onRealNode, runProcess, serverWait, type AppImage } from '@rollcall/tools/testenv';
import { registryPlugin } from '../../src/index.js';
import { kubeEnv } from '../kube-env.js';

/**
 * The README's quick start from a user's project to running pods: the project installs
 * @rollcall/core and @rollcall/kubernetes with the install line (vendored tarballs), the
 * image is built from deploy/image/Dockerfile with buildah (no network, FROM the base
 * tools/image/node-base makes), imported into the real node's containerd, and the
 * README's commands and YAML are applied as written, only the image replaced.
 */
const REPO = join(import.meta.dirname, '..', '..', '..', '..');
const MARKER = '<!-- quick-start:';
const IMAGE = 'rollcall.test/orders:quick-start';
const admin = new KubeAdmin();
const project = mkdtempSync(join(tmpdir(), 'rollcall-quick-start-'));
let namespace: string;
let observer: Registry | undefined;
let image: AppImage;

/** The README's commands and the YAML block after them, as written. */
function quickStart(): { commands: string[]; objects: KubernetesObject[] } {
  const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
  const after = readme.slice(readme.indexOf(MARKER));
  const sh = after.match(/```sh\n([\s\S]*?)```/)?.[1];
  const yaml = after.match(/```yaml\n([\s\S]*?)```/)?.[1];
  if (!sh || !yaml || readme.indexOf(MARKER) < 0) throw new Error('no sh and yaml blocks after the quick-start marker in README.md');
  return { commands: sh.split('\n').filter((l) => l.trim() !== ''), objects: loadAllYaml(yaml) as KubernetesObject[] };
}

/** Creates each object, or updates it when it exists (what `kubectl apply` does for these). */
async function apply(objects: KubernetesObject[]): Promise<void> {
  for (const object of objects) {
    const existing = await admin.objects.read(object as never).catch(() => undefined);
    if (existing) await admin.objects.replace({ ...object, metadata: { ...object.metadata, resourceVersion: existing.metadata?.resourceVersion } });
    else await admin.objects.create(object);
  }
}

/** Runs one line of the README's commands; a line it does not know fails the test. */
async function runLine(line: string, yamlObjects: KubernetesObject[]): Promise<void> {
  const command = line.replace(/\s+#.*$/, '').trim();
  let m: RegExpMatchArray | null;
  if ((m = command.match(/^kubectl create namespace (\S+)$/))) {
    namespace = m[1]!;
    await admin.core.createNamespace({ body: { metadata: { name: namespace } } });
  } else if ((m = command.match(/^rollcall (manifests .*) \| kubectl apply -f -$/))) {
    const r = await runProcess(process.execPath, [join(REPO, 'packages', 'cli', 'dist', 'bin.js'), ...m[1]!.split(/\s+/)], { env: { ...process.env, FORCE_COLOR: '0' }, timeoutMs: 60_000 });
    expect(r.code, `${command}\n${r.stderr}`).toBe(0);
    await apply((loadAllYaml(r.stdout) as KubernetesObject[]).filter(Boolean));
  } else if (/^kubectl apply -f \S+\.yaml$/.test(command)) {
    await apply(yamlObjects);
  } else {
    throw new Error(`the quick start's line is not one this test runs: ${line}`);
  }
}

const podLogs = async (selector: string) =>
  Promise.all(
    (await admin.core.listNamespacedPod({ namespace, labelSelector: selector })).items.map(async (p) => {
      const log = await admin.core.readNamespacedPodLog({ name: p.metadata!.name!, namespace }).catch(() => '');
      return log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { event: string; type?: string; id?: string });
    }),
  );

/** Whether every log saw each of `ids` added (and not removed since). */
const sawAll = (logs: { event: string; type?: string; id?: string }[][], ids: Set<string>) =>
  logs.length > 0 &&
  logs.every((lines) => {
    const seen = new Set<string>();
    for (const l of lines.filter((x) => x.event === 'peer')) l.type === 'removed' ? seen.delete(l.id!) : seen.add(l.id!);
    return [...ids].every((id) => seen.has(id));
  });

beforeAll(async () => {
  const env = { ...process.env, FORCE_COLOR: '0' };
  const started = monotonicMs();
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'orders', version: '1.0.0', private: true, type: 'module' }, null, 2));
  // The route's script alone: `npm run install-from-checkout` first runs nx's build, which `npm test` has run already, and
  // a rebuild (`rm -rf dist`) under the suites running beside this one breaks their imports (release/ tests the whole route).
  const install = await runProcess('node', [join(REPO, 'release', 'dist', 'install-from-checkout.js'), '@rollcall/core', '@rollcall/kubernetes'], { cwd: project, env: { ...env, ROLLCALL_PROJECT: project }, timeoutMs: 600_000 });
  expect(install.code, install.stdout + install.stderr).toBe(0);
  copyFileSync(join(REPO, 'packages', 'kubernetes', 'examples', 'worker.mjs'), join(project, 'worker.mjs'));
  for (const f of ['Dockerfile', '.dockerignore']) copyFileSync(join(REPO, 'deploy', 'image', f), join(project, f));
  // deploy/image/README.md's step: npm's cache in the context, for the offline build
  const cache = await runProcess('npm', ['ci', '--omit=dev', '--ignore-scripts', '--cache', '.npm-cache', '--no-audit', '--no-fund'], { cwd: project, env, timeoutMs: 300_000 });
  expect(cache.code, cache.stdout + cache.stderr).toBe(0);
  const projectMs = monotonicMs() - started;
  image = await buildAppImage(project, IMAGE);
  console.log(`quick-start image ${IMAGE}: ${(image.sizeBytes / 1e6).toFixed(0)} MB; the project (install-from-checkout, npm cache) ${(projectMs / 1000).toFixed(1)} s, base ${(image.baseMs / 1000).toFixed(1)} s, buildah bud ${(image.buildMs / 1000).toFixed(1)} s, import ${(image.importMs / 1000).toFixed(1)} s`);

  // a run killed before its afterAll leaves the README's namespace behind
  await admin.core.deleteNamespace({ name: 'orders' }).catch(() => undefined);
  await waitFor(() => admin.core.readNamespace({ name: 'orders' }).then(() => false, () => true), 120_000, serverWait({ what: 'namespace orders from an earlier run gone' }));
}, 900_000);

afterAll(async () => {
  await observer?.close();
  if (namespace) await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  rmSync(project, { recursive: true, force: true });
});

describe("the kubernetes README's quick start", () => {
  it('the image: built from the Dockerfile, runs as uid 1000, with no npm', () => {
    const user = execFileSync('buildah', ['inspect', '--type', 'image', '--format', '{{.OCIv1.Config.User}}', IMAGE], { encoding: 'utf8' }).trim();
    expect(user).toBe('1000:1000');
    const history = execFileSync('buildah', ['inspect', '--type', 'image', '--format', '{{range .OCIv1.History}}{{.CreatedBy}}\n{{end}}', IMAGE], { encoding: 'utf8' });
    expect(history).not.toContain('npm-cli.js');
    expect(image.sizeBytes).toBeLessThan(250e6);
  });

  it('runs as written on a real node (the image replaced, placed on the node): masters and workers under their accounts see each other, one master leads, in the pod liveness mode', async () => {
    const { commands, objects } = quickStart();
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual(['Service/rollcall-master', 'Service/rollcall-worker', 'Deployment/orders-master', 'Deployment/orders-worker']);
    for (const object of objects.filter((o): o is V1Deployment => o.kind === 'Deployment')) {
      const spec = object.spec!.template.spec!;
      for (const c of spec.containers) c.image = IMAGE;
      // the test environment's real node is tainted so that only pods asking for it land there
      object.spec!.template.spec = onRealNode(spec);
    }
    for (const line of commands) await runLine(line, objects);
    expect(namespace).toBe('orders');
    for (const o of objects) expect(o.metadata?.namespace).toBe(namespace);

    observer = await createRegistry({ type: 'kubernetes', cluster: 'orders', identity: 'observer', member: { liveness: 'pod' }, kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
    const masters = new Set<string>();
    const workers = new Set<string>();
    observer.watchMembers('master', (e) => (e.type === 'removed' ? masters.delete(e.member.id) : masters.add(e.member.id)));
    observer.watchMembers('worker', (e) => (e.type === 'removed' ? workers.delete(e.member.id) : workers.add(e.member.id)));
    let leader: string | undefined;
    observer.observe('scheduler').on('changed', (e) => (leader = e.leader?.identity));
    await waitFor(() => masters.size === 3 && workers.size === 2 && leader !== undefined && masters.has(leader), 180_000, serverWait({ what: 'three masters, two workers and a leader among the masters' }));

    // each process, under its own account, follows the other role: every worker saw every master, and back
    await waitFor(async () => sawAll(await podLogs('app=orders-worker'), masters) && sawAll(await podLogs('app=orders-master'), workers), 60_000, serverWait({ what: 'every worker logged every master and every master every worker' }));
    const accounts = new Map((await admin.core.listNamespacedPod({ namespace })).items.map((p) => [p.metadata!.labels!.app!, p.spec!.serviceAccountName]));
    expect(Object.fromEntries(accounts)).toEqual({ 'orders-master': 'rollcall-coordinator', 'orders-worker': 'rollcall-member' });
    await waitFor(
      async () => {
        const pods = (await admin.core.listNamespacedPod({ namespace })).items;
        return pods.length === 5 && pods.every((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      },
      60_000,
      serverWait({ what: 'five Ready pods (the readiness probe answered)' }),
    );
    // Pod mode: each member's Lease says its pod, and is not renewed.
    const leases = await admin.leases(namespace, 'rollcall.dev/cluster=orders,rollcall.dev/kind=member');
    expect(leases.map((l) => JSON.parse(l.metadata!.annotations!['rollcall.dev/liveness']!).mode)).toEqual(['pod', 'pod', 'pod', 'pod', 'pod']);
  }, 300_000);
});
