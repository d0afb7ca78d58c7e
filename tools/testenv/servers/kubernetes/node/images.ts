import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { binaryCacheRoot, testenvRoot, toolsPackageDir } from '../../../env/paths.js';
import { runStep } from '../../../process/run-step.js';
import { layerTar, writeOciArchive, type OciArchive } from './oci-image.js';

/** Images are cached by content for every instance (an instance's containerd imports what it lacks). */
const imagesDir = () => join(binaryCacheRoot(), '..', 'images');
const logFile = () => join(testenvRoot(), 'logs', 'kubernetes-node-images.log');
const hashOf = (...parts: (string | Buffer)[]) => {
  const hash = createHash('sha256');
  for (const p of parts) hash.update(p).update('\0');
  return hash.digest('hex').slice(0, 16);
};

/** Repository root (the npm workspace), whose built packages the runtime image carries. */
export const repositoryRoot = () => dirname(toolsPackageDir());

/** Workspace packages in the runtime image, with their production dependencies. */
export const RUNTIME_PACKAGES = ['@rollcall/core', '@rollcall/kubernetes', '@rollcall/pod-runner'];

/** Programs in the runtime image, at /app/<name>: the quick start's example process. */
export const RUNTIME_PROGRAMS: Record<string, string> = { 'worker.mjs': 'packages/kubernetes/examples/worker.mjs' };

/** Where the runtime image keeps them: `node /app/<file>` resolves `@rollcall/*` from here. */
export const RUNTIME_APP_DIR = '/app';

/**
 * The pod sandbox ("pause") image: one static binary built from pause.c with the
 * machine's gcc. Rebuilt only when the source changes.
 */
export async function pauseImage(): Promise<OciArchive> {
  const source = join(toolsPackageDir(), 'testenv', 'servers', 'kubernetes', 'node', 'pause.c');
  const dir = join(imagesDir(), `pause-${hashOf(readFileSync(source))}`);
  return cachedImage(dir, async () => {
    const rootfs = join(dir, 'rootfs');
    mkdirSync(rootfs, { recursive: true });
    await runStep({ step: 'build the static pause binary', command: 'gcc', args: ['-static', '-Os', '-s', '-o', join(rootfs, 'pause'), source], logFile: logFile() });
    const layer = join(dir, 'layer.tar');
    await layerTar(rootfs, layer, logFile());
    return writeOciArchive({ name: 'rollcall.test/pause', layers: [layer], config: { Entrypoint: ['/pause'] }, workDir: dir, logFile: logFile() });
  });
}

/**
 * The base images an application image starts FROM (deploy/image/Dockerfile), made by
 * `tools/image/node-base` in buildah's storage, or found there by their content key.
 */
export async function makeBaseImages(): Promise<void> {
  await runStep({ step: 'make the base images (tools/image/node-base)', command: join(toolsPackageDir(), 'image', 'node-base'), args: [], logFile: logFile() });
}

/**
 * The runtime image: this machine's Node.js with the shared libraries it links, and the
 * built workspace packages with their production dependencies under /app. Two layers,
 * each rebuilt only when its files changed; the tag is the manifest digest.
 */
export async function runtimeImage(): Promise<OciArchive> {
  const nodeLayer = await cachedLayer('node', nodeRuntimeFiles());
  const appLayer = await cachedLayer('app', appFiles());
  const dir = join(imagesDir(), `runtime-${hashOf(nodeLayer, appLayer)}`);
  return cachedImage(dir, () =>
    writeOciArchive({
      name: 'rollcall.test/runtime',
      layers: [nodeLayer, appLayer],
      config: { Cmd: ['node'], Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_ENV=production'], WorkingDir: RUNTIME_APP_DIR },
      workDir: dir,
      logFile: logFile(),
    }),
  );
}

async function cachedImage(dir: string, build: () => Promise<OciArchive>): Promise<OciArchive> {
  const record = join(dir, 'image.json');
  if (existsSync(record)) return JSON.parse(readFileSync(record, 'utf8')) as OciArchive;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = await build();
  writeFileSync(record, JSON.stringify(archive));
  return archive;
}

/** A file of a layer: its path in the image, and where it comes from. */
type LayerFiles = Map<string, string>;

/** A layer's tar, named by a hash of its files' paths and contents. */
async function cachedLayer(name: string, files: LayerFiles): Promise<string> {
  const hash = createHash('sha256');
  for (const [target, source] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    hash.update(target).update('\0').update(readFileSync(source)).update('\0');
    hash.update(String(statSync(source).mode & 0o111)).update('\0');
  }
  const dir = join(imagesDir(), 'layers');
  const tar = join(dir, `${name}-${hash.digest('hex').slice(0, 16)}.tar`);
  if (existsSync(tar)) return tar;
  const rootfs = join(dir, `${name}-rootfs-${process.pid}`);
  rmSync(rootfs, { recursive: true, force: true });
  for (const [target, source] of files) {
    const dest = join(rootfs, target);
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(source, dest);
  }
  mkdirSync(join(rootfs, 'tmp'), { recursive: true, mode: 0o1777 });
  await layerTar(rootfs, tar, logFile());
  rmSync(rootfs, { recursive: true, force: true });
  return tar;
}

/** Node.js and every shared library `ldd` says it needs, at their own paths. */
function nodeRuntimeFiles(): LayerFiles {
  const node = realpathSync(process.execPath);
  const files: LayerFiles = new Map([['usr/local/bin/node', node]]);
  const ldd = execFileSync('ldd', [node], { encoding: 'utf8' });
  for (const line of ldd.split('\n')) {
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or "/lib64/ld-linux-x86-64.so.2 (0x…)"
    const path = line.match(/(?:=>\s*)?(\/\S+)\s+\(0x/)?.[1];
    if (path) files.set(path.slice(1), realpathSync(path));
  }
  return files;
}

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * The runtime packages' built files (package.json and dist/) and, walking Node's
 * resolution from each package's real directory, every production dependency's
 * directory, placed as npm placed it under the workspace root's node_modules.
 */
function appFiles(): LayerFiles {
  const root = repositoryRoot();
  const files: LayerFiles = new Map();
  const seen = new Set<string>();
  const addTree = (source: string, target: string) => {
    for (const entry of readdirSync(source, { withFileTypes: true })) {
      const s = join(source, entry.name);
      if (entry.isDirectory()) addTree(s, join(target, entry.name));
      else if (entry.isFile()) files.set(join(target, entry.name), s);
    }
  };
  const resolveFrom = (fromDir: string, name: string): string | undefined => {
    for (let dir = fromDir; dir.startsWith(root); dir = dirname(dir)) {
      const candidate = join(dir, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) return candidate;
      if (dir === root) break;
    }
    return undefined;
  };
  const visit = (linkDir: string) => {
    const dir = realpathSync(linkDir);
    if (seen.has(dir)) return;
    seen.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    const isWorkspace = !relative(root, dir).startsWith('node_modules');
    const target = join(RUNTIME_APP_DIR.slice(1), isWorkspace ? join('node_modules', manifest.name) : relative(root, dir));
    if (isWorkspace) {
      files.set(join(target, 'package.json'), join(dir, 'package.json'));
      addTree(join(dir, 'dist'), join(target, 'dist'));
    } else {
      addTree(dir, target);
    }
    for (const dep of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) {
      const found = resolveFrom(dir, dep);
      if (found) visit(found);
      else if (!manifest.optionalDependencies?.[dep]) throw new Error(`runtime image: ${manifest.name} needs ${dep}, not installed (run npm ci)`);
    }
  };
  for (const pkg of RUNTIME_PACKAGES) visit(join(root, 'node_modules', pkg));
  files.set(join(RUNTIME_APP_DIR.slice(1), 'package.json'), writeAppManifest());
  for (const [name, source] of Object.entries(RUNTIME_PROGRAMS)) files.set(join(RUNTIME_APP_DIR.slice(1), name), join(root, source));
  return files;
}

function writeAppManifest(): string {
  const file = join(imagesDir(), 'app-package.json');
  mkdirSync(imagesDir(), { recursive: true });
  writeFileSync(file, JSON.stringify({ name: 'rollcall-runtime', private: true, type: 'module' }, null, 2) + '\n');
  return file;
}
