// Installs @rollcall packages from this checkout into a project, until they are
// on the npm registry:
//   npm --prefix <checkout> run install-from-checkout -- <package>...      (in the project's directory)
// Packs every package (built first by the npm script) into a temporary directory, copies the named ones and the
// @rollcall packages they need into the project's vendor/rollcall/, depends on them
// there with relative `file:` paths and points each at its tarball with `overrides`
// (so no @rollcall package is fetched from the registry), and runs `npm install`.
// The project then holds everything it installs from: committed with vendor/rollcall,
// it builds in a Docker context, a CI job or a teammate's clone, none of which has
// this checkout. Running it again adds packages and replaces older tarballs.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { packAll, type Tarball } from './pack.js';
import { REPO_ROOT, readManifest, publishedPackages } from './workspace.js';

/** Where the tarballs go, relative to the project: the `file:` specs name it. */
export const VENDOR_DIR = 'vendor/rollcall';

function fail(message: string): never {
  process.stderr.write(`install-from-checkout: ${message}\n`);
  process.exit(2);
}

/** The named packages and every @rollcall package they need (dependencies and required peers). */
function closure(names: readonly string[]): Set<string> {
  const manifests = new Map(publishedPackages().map((p) => [p.manifest.name, readManifest(p.dir)]));
  const needed = new Set<string>();
  const visit = (name: string) => {
    const manifest = manifests.get(name);
    if (!manifest || needed.has(name)) return;
    needed.add(name);
    const optionalPeers = manifest.peerDependenciesMeta ?? {};
    const peers = Object.keys(manifest.peerDependencies ?? {}).filter((p) => !optionalPeers[p]?.optional);
    for (const dep of [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {}), ...peers]) visit(dep);
  };
  names.forEach(visit);
  return needed;
}

const names = process.argv.slice(2).filter((a) => !a.startsWith('-'));
// npm run changes the directory to the checkout; INIT_CWD is where it was run.
const project = resolve(process.env.ROLLCALL_PROJECT ?? process.env.INIT_CWD ?? process.cwd());
if (names.length === 0) fail('name the packages to install, e.g. @rollcall/core @rollcall/kubernetes (run it in your project\'s directory)');
if (resolve(project) === resolve(REPO_ROOT)) fail('run it in your project\'s directory, not in the checkout: npm --prefix <checkout> run install-from-checkout -- @rollcall/core');
const manifestPath = join(project, 'package.json');
if (!existsSync(manifestPath)) fail(`${project} has no package.json; run npm init -y there first`);

// a directory of this run's own: two installs at once (tests) never share one
const packed = mkdtempSync(join(tmpdir(), 'rollcall-packed-'));
const tarballs = packAll(packed);
const unknown = names.filter((n) => !tarballs.some((t) => t.name === n));
if (unknown.length) fail(`${unknown.join(', ')}: not a package of this checkout; there are ${tarballs.map((t) => t.name).join(', ')}`);

const vendor = join(project, VENDOR_DIR);
mkdirSync(vendor, { recursive: true });
const vendored: Tarball[] = tarballs.filter((t) => closure(names).has(t.name));
for (const t of vendored) {
  // an older version of the same package goes: npm pack names the file <scope>-<name>-<version>.tgz
  const prefix = basename(t.file).slice(0, -`${t.version}.tgz`.length);
  for (const old of readdirSync(vendor)) if (old.startsWith(prefix) && /^\d/.test(old.slice(prefix.length)) && old !== basename(t.file)) rmSync(join(vendor, old));
  copyFileSync(t.file, join(vendor, basename(t.file)));
}
rmSync(packed, { recursive: true, force: true });

const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { dependencies?: Record<string, string>; overrides?: Record<string, string> };
const spec = (t: Tarball) => `file:${VENDOR_DIR}/${basename(t.file)}`;
const byName = new Map(vendored.map((t) => [t.name, spec(t)]));
manifest.dependencies = { ...manifest.dependencies, ...Object.fromEntries(names.map((n) => [n, byName.get(n)!])) };
// Every @rollcall package from its tarball, also those the named ones depend on: none is on
// the registry yet. Overrides of an earlier run stay while their tarball is still vendored.
const earlier = Object.entries(manifest.overrides ?? {}).filter(([name, s]) => !name.startsWith('@rollcall/') || (s.startsWith(`file:${VENDOR_DIR}/`) && existsSync(join(project, s.slice('file:'.length)))));
manifest.overrides = { ...Object.fromEntries(earlier), ...Object.fromEntries(byName) };
for (const [name, s] of Object.entries(manifest.dependencies)) if (name.startsWith('@rollcall/') && manifest.overrides[name]) manifest.dependencies[name] = manifest.overrides[name] ?? s;
writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n');
process.stdout.write(`vendored ${vendored.map((t) => basename(t.file)).join(', ')} into ${VENDOR_DIR}/ (commit it with the project); installing ${names.join(', ')} into ${project}\n`);
execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: project, stdio: 'inherit' });
