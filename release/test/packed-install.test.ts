import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { runProcess, type ProcessResult } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copiesOf, freshProject, type FreshProject } from '../src/fresh-project.js';
import { packAll, type Tarball } from '../src/pack.js';
import { publishedPackages, REPO_ROOT, rootManifest } from '../src/workspace.js';

// Every package packed with plain `npm pack` and installed from the tarballs
// into projects in the temp directory, outside the repository, as a user would.
// Third-party dependencies come from the registry; nothing @rollcall does.

/**
 * What the application installs: every published library, a new one too. Not the CLI (it has a project of
 * its own below) nor the conformance kit (a test suite, with vitest as its peer).
 */
const LIBRARIES = publishedPackages()
  .map((p) => p.manifest.name)
  .filter((name) => name !== '@rollcall/cli' && name !== '@rollcall/conformance');
const devVersion = (name: string) => (rootManifest() as { devDependencies?: Record<string, string> }).devDependencies![name]!;

let tarballDir: string;
let tarballs: Tarball[];
let app: FreshProject;

beforeAll(() => {
  tarballDir = mkdtempSync(join(tmpdir(), 'rollcall-tarballs-'));
  tarballs = packAll(tarballDir);
  // --ignore-scripts: no dependency's install script runs; better-sqlite3 13 needs none (a prebuilt Node-API addon).
  app = freshProject(tarballs, { rollcall: LIBRARIES, registry: { typescript: devVersion('typescript'), '@types/node': devVersion('@types/node') }, ignoreScripts: true });
});

afterAll(() => {
  for (const dir of [tarballDir, app?.dir]) if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs an ES module in the project; resolves with its exit code and output, killing it after `timeoutMs`. */
function runModule(project: FreshProject, name: string, source: string, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  writeFileSync(join(project.dir, name), source);
  return runIn(project.dir, process.execPath, [name], timeoutMs);
}

/** Output without colours, whatever the runner's FORCE_COLOR (nx sets it), so it reads as a user's pipe does. */
const PLAIN_ENV: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0' };

function runIn(cwd: string, command: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = PLAIN_ENV): Promise<ProcessResult> {
  return runProcess(command, args, { cwd, env, timeoutMs });
}

/** The ```ts blocks of a README, but those after `<!-- not compiled: … -->` (templates, pseudo-code). */
function readmeExamples(readme: string): string[] {
  const text = readFileSync(readme, 'utf8');
  return [...text.matchAll(/(<!-- not compiled[^>]*-->\s*)?```ts\n([\s\S]*?)```/g)].filter((m) => !m[1]).map((m) => m[2]!);
}

describe('the tarballs', () => {
  it('hold the LICENSE, the README and every file their source maps point at', () => {
    expect(tarballs.map((t) => t.name).sort()).toEqual(publishedPackages().map((p) => p.manifest.name).sort());
    for (const t of tarballs) {
      expect(t.files, t.name).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json']));
      const unpacked = mkdtempSync(join(tarballDir, 'unpacked-'));
      execFileSync('tar', ['-xzf', t.file, '-C', unpacked]);
      for (const map of t.files.filter((f) => f.endsWith('.map'))) {
        const { sources, sourceRoot } = JSON.parse(readFileSync(join(unpacked, 'package', map), 'utf8')) as { sources: string[]; sourceRoot?: string };
        for (const source of sources) expect(t.files, `${t.name}: ${map} points at ${source}`).toContain(posix.normalize(posix.join(posix.dirname(map), sourceRoot ?? '', source)));
      }
    }
  });
});

describe('an application: core and every backend, installed from the tarballs', () => {
  it('has one copy of @rollcall/core and of @kubernetes/client-node', () => {
    expect(copiesOf(app.dir, '@rollcall/core')).toEqual(['node_modules/@rollcall/core']);
    expect(copiesOf(app.dir, '@kubernetes/client-node')).toHaveLength(1);
  });

  it("a plugin's errors are instanceof the application's RegistryError", async () => {
    const r = await runModule(
      app,
      'instanceof.mjs',
      `import { createRegistry, ConfigurationError, RegistryError, UnavailableError } from '@rollcall/core';
const kube = await createRegistry({ type: 'kubernetes', kubernetes: { kubeconfig: '/nonexistent/kubeconfig' } }).catch((e) => e);
const etcd = await createRegistry({ type: 'etcd', requestTimeoutMs: 500, etcd: { endpoints: ['http://127.0.0.1:9'] } }).catch((e) => e);
console.log(JSON.stringify({
  kube: { registry: kube instanceof RegistryError, config: kube instanceof ConfigurationError, backend: kube.backend, code: kube.code },
  etcd: { registry: etcd instanceof RegistryError, unavailable: etcd instanceof UnavailableError, backend: etcd.backend, code: etcd.code },
}));`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      kube: { registry: true, config: true, backend: 'kubernetes', code: 'INVALID_CONFIG' },
      etcd: { registry: true, unavailable: true, backend: 'etcd', code: 'UNAVAILABLE' },
    });
  });

  it('require() of the ESM packages works on this Node (the engines field: >= 22.19)', async () => {
    writeFileSync(join(app.dir, 'required.cjs'), "const { createRegistry } = require('@rollcall/core');\nconst { registryPlugin } = require('@rollcall/etcd');\nconsole.log(typeof createRegistry, registryPlugin.type);\n");
    const r = await runIn(app.dir, process.execPath, ['required.cjs'], 30_000);
    expect(r.stderr).not.toMatch(/ERR_REQUIRE_ESM/);
    expect(r.stdout.trim()).toBe('function etcd');
  });

  it('sqlite works from an install that ran no install script (better-sqlite3 13 loads its prebuilt Node-API addon)', async () => {
    const script = `import { createRegistry } from '@rollcall/core';
const registry = await createRegistry({ type: 'sqlite', cluster: 'orders', sqlite: { path: 'app.db' } });
const me = await registry.announce({ role: 'worker', payload: { status: 'NORMAL' } });
const members = await registry.members('worker');
await registry.close();
console.log(JSON.stringify(members.map((m) => m.id === me.id)));`;
    const r = await runModule(app, 'sqlite.mjs', script);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([true]);
  });

  it("a plugin whose own dependency is missing is reported as that dependency", async () => {
    rmSync(join(app.dir, 'node_modules', 'node-zookeeper-client'), { recursive: true, force: true });
    const r = await runModule(app, 'pruned.mjs', "import { createRegistry } from '@rollcall/core';\nawait createRegistry({ type: 'zookeeper' });\n");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('@rollcall/zookeeper is installed, but its dependency node-zookeeper-client is not');
    expect(r.stderr).toContain('Run: npm install node-zookeeper-client');
  });

  describe('the README examples type-check, as a user compiles them', () => {
    const readmes = [join(REPO_ROOT, 'README.md'), ...publishedPackages().map((p) => join(p.dir, 'README.md'))];
    const examples = readmes.flatMap((readme) => readmeExamples(readme).map((code, i) => ({ name: `${posix.relative(REPO_ROOT, readme).replace(/[/.]/g, '-')}-${i}.ts`, code })));
    // Every backend's section typed by its package, as in an application that imports them.
    const sections = LIBRARIES.map((b) => `import type {} from '${b}';`).join('\n');
    const typos = `import { createRegistry } from '@rollcall/core';
import type {} from '@rollcall/sqlite';
// @ts-expect-error not a registry.type
await createRegistry({ type: 'sqlte' });
// @ts-expect-error not a key of the sqlite section
await createRegistry({ type: 'sqlite', sqlite: { pth: 'app.db' } });
export {};
`;

    it.each([
      ['nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
      ['bundler', { module: 'preserve', moduleResolution: 'bundler' }],
    ] as const)('under %s', (name, resolution) => {
      expect(examples.length).toBeGreaterThanOrEqual(6);
      const dir = join(app.dir, `examples-${name}`);
      mkdirSync(dir, { recursive: true });
      for (const e of examples) writeFileSync(join(dir, e.name), e.code);
      writeFileSync(join(dir, 'sections.ts'), `${sections}\nexport {};\n`);
      writeFileSync(join(dir, 'typos.ts'), typos);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        // skipLibCheck as `tsc --init` sets it: @kubernetes/client-node's own declarations need @types/ws otherwise. Core's build checks its declarations without it.
        JSON.stringify({ compilerOptions: { ...resolution, target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, include: ['*.ts'] }),
      );
      app.exec(join(app.dir, 'node_modules', '.bin', 'tsc'), ['-p', dir]);
    });
  });

  it('the README example runs, on memory and on sqlite', async () => {
    const [example] = readmeExamples(join(REPO_ROOT, 'README.md'));
    // Ends it once it has printed what it shows (its member added, itself elected), within a bound.
    const bounded = (code: string) => `const seen = [];
const shown = new Promise((resolve) => {
  const log = console.log;
  console.log = (...args) => {
    log(...args);
    seen.push(args[0]);
    if (seen.includes('added') && seen.some((s) => String(s).startsWith('leading, term'))) resolve();
  };
});
${code}
await Promise.race([shown, new Promise((_, reject) => setTimeout(() => reject(new Error('not shown within 20 s')), 20_000).unref())]);
await registry.close();
`;
    for (const [backend, source] of [
      ['memory', example!],
      ['sqlite', example!.replace("{ type: 'memory', cluster: 'orders' }", "{ type: 'sqlite', cluster: 'orders', sqlite: { path: 'readme.db' } }")],
    ] as const) {
      expect(source).toContain(`type: '${backend}'`);
      const r = await runModule(app, `readme-${backend}.mjs`, bounded(source));
      expect(r.code, `${backend}: ${r.stderr}`).toBe(0);
      expect(r.stdout, backend).toMatch(/^leading, term \d+$/m);
      expect(r.stdout, backend).toMatch(/^added \S+ \{ cpu: 0\.2, status: 'NORMAL' \}$/m);
    }
  });
});

describe('the CLI alone, laid out as a global install', () => {
  let cli: FreshProject;
  beforeAll(() => {
    // no install script: better-sqlite3 13's prebuilt addon serves the demo's sqlite
    cli = freshProject(tarballs, { rollcall: ['@rollcall/cli'], installStrategy: 'shallow', ignoreScripts: true });
  });
  afterAll(() => cli && rmSync(cli.dir, { recursive: true, force: true }));
  const rollcall = (args: string[], timeoutMs = 60_000) => runIn(cli.dir, join(cli.dir, 'node_modules', '.bin', 'rollcall'), args, timeoutMs);

  it('carries no backend but sqlite (and metrics, for --metrics-port; migrate; the child harness), no conformance suite, no @kubernetes/client-node and no vitest', () => {
    const installed = readdirSync(join(cli.dir, 'node_modules', '@rollcall', 'cli', 'node_modules', '@rollcall')).sort();
    // migrate: a combinator with no client of its own; child-harness: the demo runs its nodes on it; pod-runner-activity: metrics' types, no code.
    expect(installed).toEqual(['child-harness', 'core', 'metrics', 'migrate', 'pod-runner-activity', 'sql', 'sqlite']);
    expect(copiesOf(cli.dir, '@kubernetes/client-node')).toEqual([]);
    expect(copiesOf(cli.dir, 'vitest')).toEqual([]);
  });

  it('--help, and a backend or the pod runner not installed is PLUGIN_NOT_INSTALLED with the install line (exit 3)', async () => {
    const help = await rollcall(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('manifests');
    const etcd = await rollcall(['members', '-t', 'etcd']);
    expect(etcd.code).toBe(3);
    expect(etcd.stderr).toContain('rollcall: error PLUGIN_NOT_INSTALLED');
    expect(etcd.stderr).toContain('Run: npm --prefix <rollcall checkout> run install-from-checkout -- @rollcall/etcd   # not on npm yet; published: npm install @rollcall/etcd');
    const tasks = await rollcall(['tasks', '-n', 'batch']);
    expect(tasks.code).toBe(3);
    expect(tasks.stderr).toContain('rollcall: error PLUGIN_NOT_INSTALLED: rollcall tasks needs the package @rollcall/pod-runner, which is not installed. Run: npm --prefix <rollcall checkout> run install-from-checkout -- @rollcall/pod-runner   # not on npm yet; published: npm install @rollcall/pod-runner');
  });

  it('manifests prints the files of deploy/kubernetes it carries, byte for byte', async () => {
    const shipped = join(cli.dir, 'node_modules', '@rollcall', 'cli', 'dist', 'manifests');
    const deploy = join(REPO_ROOT, 'deploy', 'kubernetes');
    const files = readdirSync(deploy).filter((f) => /^rollcall-.+\.yaml$/.test(f));
    expect(readdirSync(shipped).sort()).toEqual(files.sort());
    for (const f of files) expect(readFileSync(join(shipped, f), 'utf8'), f).toBe(readFileSync(join(deploy, f), 'utf8'));
    const r = await rollcall(['manifests', '--role', 'member', '--namespace', 'prod']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('kind: RoleBinding');
    expect(r.stdout).toMatch(/^ {2}namespace: prod$/m);
  });

  it('rollcall demo runs to its summary on its own sqlite file', async () => {
    const r = await rollcall(['demo'], 180_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^summary:$/m);
  });
});
