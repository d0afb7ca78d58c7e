import { execFileSync } from 'node:child_process';

/** Installed version of a Debian package, e.g. "3.8.0-11+deb12u2", or "unknown". */
export function debianPackageVersion(pkg: string): string {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', pkg], { encoding: 'utf8' }).trim() || 'unknown';
  } catch {
    return 'unknown';
  }
}
