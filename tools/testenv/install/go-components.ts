import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { goModuleDir } from '../env/paths.js';

/** One Go-built component: its pinned module under tools/go/<module>, and what to build. */
export interface GoComponent {
  /** Cache name, e.g. "kubernetes"; binaries land in <cache>/<name>-<version>/. */
  name: string;
  /** Directory under tools/go that holds the pinning go.mod. */
  module: string;
  /** The module whose version names the cache entry. */
  versionOf: string;
  /** Package path → binary name. */
  binaries: Record<string, string>;
  /** Extra -ldflags (beyond -s -w), given the version. */
  ldflags?: (version: string) => string[];
  /** Files copied from the versioned module's source into the cache entry: source → target name. */
  moduleFiles?: Record<string, string[]>;
}

/** The version a component is pinned to, read from its go.mod (the single source of truth). */
export function componentVersion(component: GoComponent): string {
  const goMod = readFileSync(join(goModuleDir(component.module), 'go.mod'), 'utf8');
  const escaped = component.versionOf.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const match = goMod.match(new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, 'm'));
  if (!match?.[1]) throw new Error(`no version of ${component.versionOf} in tools/go/${component.module}/go.mod`);
  return match[1];
}
