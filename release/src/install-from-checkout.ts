// Installs @rollcall packages from this checkout into a project, until they are
// on the npm registry:
//   npm --prefix <checkout> run install-from-checkout -- <package>...      (in the project's directory)
// Packs every package (built first by the npm script) into <checkout>/packed,
// then, in the project, depends on the named ones through their tarballs and
// points every @rollcall package at its tarball with `overrides`, so no
// @rollcall package is fetched from the registry, and runs `npm install`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packAll } from './pack.js';
import { REPO_ROOT } from './workspace.js';

function fail(message: string): never {
  process.stderr.write(`install-from-checkout: ${message}\n`);
  process.exit(2);
}

const names = process.argv.slice(2).filter((a) => !a.startsWith('-'));
// npm run changes the directory to the checkout; INIT_CWD is where it was run.
const project = resolve(process.env.ROLLCALL_PROJECT ?? process.env.INIT_CWD ?? process.cwd());
if (names.length === 0) fail('name the packages to install, e.g. @rollcall/core @rollcall/kubernetes (run it in your project\'s directory)');
if (resolve(project) === resolve(REPO_ROOT)) fail('run it in your project\'s directory, not in the checkout: npm --prefix <checkout> run install-from-checkout -- @rollcall/core');
const manifestPath = join(project, 'package.json');
if (!existsSync(manifestPath)) fail(`${project} has no package.json; run npm init -y there first`);

const packed = join(REPO_ROOT, 'packed');
rmSync(packed, { recursive: true, force: true });
mkdirSync(packed);
const tarballs = packAll(packed);
const unknown = names.filter((n) => !tarballs.some((t) => t.name === n));
if (unknown.length) fail(`${unknown.join(', ')}: not a package of this checkout; there are ${tarballs.map((t) => t.name).join(', ')}`);

const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { dependencies?: Record<string, string>; overrides?: Record<string, string> };
const spec = (name: string) => `file:${tarballs.find((t) => t.name === name)!.file}`;
manifest.dependencies = { ...manifest.dependencies, ...Object.fromEntries(names.map((n) => [n, spec(n)])) };
// Every @rollcall package from its tarball, also those the named ones depend on: none is on the registry yet.
manifest.overrides = { ...manifest.overrides, ...Object.fromEntries(tarballs.map((t) => [t.name, spec(t.name)])) };
writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n');
process.stdout.write(`packed ${tarballs.length} packages into ${packed}; installing ${names.join(', ')} into ${project}\n`);
execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: project, stdio: 'inherit' });
