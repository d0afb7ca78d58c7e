import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, type Manifest, type WorkspacePackage } from './workspace.js';

/** The scripts a published manifest may carry: the workspace's own build and test. Anything else is dev-only. */
export const PUBLISHED_SCRIPTS: readonly string[] = ['build', 'test'];

const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'devDependencies', 'optionalDependencies'] as const;

/** `https://github.com/<owner>/<repo>` from the root's `git+https://….git`. */
export function repositoryWeb(root: Manifest): string {
  return (root.repository?.url ?? '').replace(/^git\+/, '').replace(/\.git$/, '');
}

/** Markdown link targets of a README: inline `[text](target)` and reference `[id]: target`. */
export function markdownLinks(text: string): string[] {
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const reference = [...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!);
  const html = [...text.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)].map((m) => m[1]!);
  return [...inline, ...reference, ...html];
}

function srcImports(dir: string, specifier: string): boolean {
  const src = join(dir, 'src');
  if (!existsSync(src)) return false;
  const walk = (d: string): boolean =>
    readdirSync(d, { withFileTypes: true }).some((e) => (e.isDirectory() ? walk(join(d, e.name)) : /\.[cm]?tsx?$/.test(e.name) && readFileSync(join(d, e.name), 'utf8').includes(`'${specifier}`)));
  return walk(src);
}

/**
 * What keeps a workspace package from being published as it should be: one
 * sentence per broken rule, naming the field. Empty when it complies.
 */
export function publishingProblems(pkg: WorkspacePackage, workspace: readonly WorkspacePackage[], root: Manifest): string[] {
  const m = pkg.manifest;
  const problems: string[] = [];
  const web = repositoryWeb(root);
  const files = m.files ?? [];

  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(m.version ?? '')) problems.push(`version ${JSON.stringify(m.version)}: not a semver version`);
  if (!m.description) problems.push('description: missing');
  if (!Array.isArray(m.keywords) || m.keywords.length === 0) problems.push('keywords: missing (what a registry search finds it by)');
  if (m.license !== root.license) problems.push(`license ${JSON.stringify(m.license)}: expected ${root.license}, the repository's`);
  const licence = join(pkg.dir, 'LICENSE');
  if (!existsSync(licence)) problems.push('LICENSE: missing from the package directory (npm packs only files under it): copy the root LICENSE');
  else if (readFileSync(licence, 'utf8') !== readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8')) problems.push('LICENSE: differs from the root LICENSE');
  if (m.repository?.type !== 'git' || m.repository.url !== root.repository?.url || m.repository.directory !== pkg.path) {
    problems.push(`repository: expected { "type": "git", "url": ${JSON.stringify(root.repository?.url)}, "directory": ${JSON.stringify(pkg.path)} }`);
  }
  if (m.homepage !== `${web}/tree/main/${pkg.path}#readme`) problems.push(`homepage: expected ${web}/tree/main/${pkg.path}#readme`);
  if (m.bugs?.url !== root.bugs?.url) problems.push(`bugs.url: expected ${root.bugs?.url}`);
  if (m.engines?.node !== root.engines?.node) problems.push(`engines.node ${JSON.stringify(m.engines?.node)}: expected ${JSON.stringify(root.engines?.node)}, the root's (undici 8, under @kubernetes/client-node 2, needs Node 22.19)`);
  if (m.publishConfig?.access !== 'public') problems.push('publishConfig.access: expected "public" (a scoped package is private by default)');
  if (m.type !== 'module') problems.push('type: expected "module"');
  for (const needed of ['dist', 'README.md', 'LICENSE']) if (!files.includes(needed)) problems.push(`files: ${needed} missing`);
  if (!existsSync(join(pkg.dir, 'README.md'))) problems.push('README.md: missing');
  if (!m.exports && !m.bin) problems.push('exports: missing');

  for (const name of Object.keys(m.scripts ?? {})) {
    if (!PUBLISHED_SCRIPTS.includes(name)) problems.push(`scripts.${name}: dev-only, yet published; a published manifest has only ${PUBLISHED_SCRIPTS.join(' and ')} (put the script in the package's project.json as an nx target, which is not published)`);
  }
  if (!m.scripts?.build?.startsWith('rm -rf dist && ')) problems.push('scripts.build: must start from an empty dist (rm -rf dist && …), or a file an earlier build left is packed and published');
  if ('nx' in m) problems.push('nx: dev-only configuration in a published manifest; move it to project.json');

  const byName = new Map(workspace.map((w) => [w.manifest.name, w]));
  for (const field of DEPENDENCY_FIELDS) {
    for (const [name, range] of Object.entries(m[field] ?? {})) {
      if (range === '*' || range === '' || range === 'latest' || /^(file|link|workspace|git\+?[a-z]*):/.test(range)) problems.push(`${field}.${name} ${JSON.stringify(range)}: not a real range`);
      const internal = byName.get(name);
      if (!internal) continue;
      if (internal.manifest.private) problems.push(`${field}.${name}: a private workspace package, never published; a dev-only link goes in project.json (implicitDependencies), not in a published manifest`);
      else if (range !== `^${internal.manifest.version}`) problems.push(`${field}.${name} ${JSON.stringify(range)}: expected ^${internal.manifest.version}, its version`);
    }
  }

  // One copy of core in an application: a library that uses it takes it as a peer. An application (a bin) owns it.
  const usesCore = m.name !== '@rollcall/core' && (srcImports(pkg.dir, '@rollcall/core') || DEPENDENCY_FIELDS.some((f) => m[f]?.['@rollcall/core']));
  if (usesCore && !m.bin) {
    if (m.dependencies?.['@rollcall/core']) problems.push('dependencies.@rollcall/core: a library takes core as a peerDependency, or an application gets two copies of it (and a plugin\'s errors are not instanceof its RegistryError)');
    if (!m.peerDependencies?.['@rollcall/core']) problems.push('peerDependencies.@rollcall/core: missing');
  }

  const readme = join(pkg.dir, 'README.md');
  if (existsSync(readme)) {
    for (const link of markdownLinks(readFileSync(readme, 'utf8'))) {
      if (link.startsWith('#') || link.startsWith('mailto:')) continue;
      if (!/^https?:\/\//.test(link)) {
        problems.push(`README.md link ${link}: relative, so broken on the registry's page; link ${web}/blob/main/…`);
        continue;
      }
      const inRepo = new RegExp(`^${web.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/(?:blob|tree)/main/([^#?]*)`).exec(link);
      if (inRepo) {
        const target = join(REPO_ROOT, decodeURIComponent(inRepo[1]!));
        if (!existsSync(target)) problems.push(`README.md link ${link}: no such path in the repository`);
        else if (link.includes('/blob/') && statSync(target).isDirectory()) problems.push(`README.md link ${link}: a directory, link it with /tree/`);
      }
    }
  }
  return problems;
}
