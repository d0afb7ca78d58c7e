import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '@rollcall/tools/testenv';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/workspace.js';

// The root README's route until the packages are published, followed literally:
// one command, run in a project outside the repository.
const project = mkdtempSync(join(tmpdir(), 'rollcall-from-checkout-'));
// the project as a Docker context, a CI job or a teammate's clone has it: no node_modules, elsewhere
const moved = mkdtempSync(join(tmpdir(), 'rollcall-from-checkout-moved-'));
afterAll(() => {
  rmSync(project, { recursive: true, force: true });
  rmSync(moved, { recursive: true, force: true });
  rmSync(join(REPO_ROOT, 'packed'), { recursive: true, force: true });
});

describe('installing from a checkout', () => {
  it('npm --prefix <checkout> run install-from-checkout -- @rollcall/core @rollcall/sqlite vendors them into the project, relative file: paths, no @rollcall package from the registry, and a registry runs', async () => {
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }, null, 2));
    const env = { ...process.env, FORCE_COLOR: '0' };
    // ROLLCALL_CHECKOUT_BUILT skips the route's nx build, which `npm test` ran already: nx rewrites every package's dist
    // even when it reads the build from its cache, and the suites running beside this one would miss their modules.
    const install = await runProcess('npm', ['--prefix', REPO_ROOT, 'run', 'install-from-checkout', '--', '@rollcall/core', '@rollcall/sqlite'], { cwd: project, env: { ...env, ROLLCALL_CHECKOUT_BUILT: '1' }, timeoutMs: 900_000 });
    expect(install.code, install.stdout + install.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; overrides: Record<string, string> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['@rollcall/core', '@rollcall/sqlite']);
    // the named packages and the one they need (sqlite's @rollcall/sql), no other
    expect(Object.keys(manifest.overrides).sort()).toEqual(['@rollcall/core', '@rollcall/sql', '@rollcall/sqlite']);
    for (const spec of [...Object.values(manifest.dependencies), ...Object.values(manifest.overrides)]) {
      expect(spec).toMatch(/^file:vendor\/rollcall\/rollcall-[a-z-]+-\d+\.\d+\.\d+\.tgz$/);
      expect(existsSync(join(project, spec.slice('file:'.length))), spec).toBe(true);
    }
    expect(readdirSync(join(project, 'vendor', 'rollcall'))).toHaveLength(3);
    expect(existsSync(join(REPO_ROOT, 'packed')), 'the checkout keeps no packed/ the project depends on').toBe(false);
    // Every @rollcall package installed came from its tarball.
    const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, { resolved?: string }> };
    const rollcall = Object.entries(lock.packages).filter(([path]) => path.includes('node_modules/@rollcall/'));
    expect(rollcall.map(([path]) => path).sort()).toEqual(['node_modules/@rollcall/core', 'node_modules/@rollcall/sql', 'node_modules/@rollcall/sqlite']);
    for (const [path, entry] of rollcall) expect(entry.resolved, path).toMatch(/^file:vendor\/rollcall\//);
    expect(readFileSync(join(project, 'package-lock.json'), 'utf8')).not.toContain(REPO_ROOT);

    writeFileSync(
      join(project, 'app.mjs'),
      `import { createRegistry, shutdownOnSignals } from '@rollcall/core';
const registry = await createRegistry({ type: 'sqlite', cluster: 'orders', identity: 'app', sqlite: { path: 'app.db' } });
shutdownOnSignals(registry);
const token = await registry.campaign('scheduler').whenElected(AbortSignal.timeout(20_000));
await registry.announce({ role: 'worker', id: 'w1' });
console.log(JSON.stringify({ token, members: (await registry.members('worker')).map((m) => m.id) }));
await registry.close();
`,
    );
    const r = await runProcess(process.execPath, ['app.mjs'], { cwd: project, env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ token: 1, members: ['w1'] });

    // Elsewhere, without node_modules: npm ci installs from vendor/ and npm's cache, offline.
    cpSync(project, moved, { recursive: true, filter: (src) => !src.includes('node_modules') && !src.endsWith('.db') });
    const ci = await runProcess('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: moved, env, timeoutMs: 300_000 });
    expect(ci.code, ci.stdout + ci.stderr).toBe(0);
    const again = await runProcess(process.execPath, ['app.mjs'], { cwd: moved, env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ token: 1, members: ['w1'] });
  });

  it('a CommonJS application require()s @rollcall/core (Node >= 22.12 loads ES modules) and a registry runs', async () => {
    const env = { ...process.env, FORCE_COLOR: '0' };
    writeFileSync(
      join(moved, 'app.cjs'),
      `const { createRegistry } = require('@rollcall/core');
(async () => {
  const registry = await createRegistry({ type: 'sqlite', cluster: 'orders', identity: 'cjs', sqlite: { path: 'cjs.db' } });
  const token = await registry.campaign('scheduler').whenElected(AbortSignal.timeout(20_000));
  console.log(JSON.stringify({ token, type: typeof createRegistry }));
  await registry.close();
})();
`,
    );
    const r = await runProcess(process.execPath, ['app.cjs'], { cwd: moved, env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/ExperimentalWarning/);
    expect(JSON.parse(r.stdout)).toEqual({ token: 1, type: 'function' });
  });
});
