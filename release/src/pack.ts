import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { publishedPackages, type WorkspacePackage } from './workspace.js';

/** One package as `npm pack` left it. */
export interface Tarball {
  name: string;
  version: string;
  /** Absolute path of the .tgz. */
  file: string;
  /** Every path inside it, relative to the package root. */
  files: string[];
}

/**
 * Packs each package with plain `npm pack` (what `npm publish` uploads) into
 * `destination`. The packages must be built: `dist` is what they ship.
 */
export function packAll(destination: string, packages: readonly WorkspacePackage[] = publishedPackages()): Tarball[] {
  return packages.map((pkg) => {
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', destination], { cwd: pkg.dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const [report] = JSON.parse(out) as { name: string; version: string; filename: string; files: { path: string }[] }[];
    if (!report) throw new Error(`npm pack in ${pkg.path} reported nothing`);
    return { name: report.name, version: report.version, file: join(destination, report.filename), files: report.files.map((f) => f.path) };
  });
}
