import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A compiled file of the package `name`, found by walking up from `from` (a
 * module's `import.meta.url`) to that package's root, so a child's entry is
 * found the same from `src` (tests) and from `dist`. Throws, naming the build
 * to run, when the file is missing.
 */
export function packageFile(from: string, name: string, path: string, build: string): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === name) break;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`[rollcall] cannot find the ${name} package root above ${fileURLToPath(from)}`);
    dir = parent;
  }
  const file = join(dir, path);
  if (!existsSync(file)) throw new Error(`[rollcall] ${file} is missing: build ${name} first (${build})`);
  return file;
}
