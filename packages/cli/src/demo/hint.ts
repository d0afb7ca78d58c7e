import { realpathSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This package's directory (dist/demo/ is two below it), where any `rollcall` that is this one resolves to. */
const PACKAGE = fileURLToPath(new URL('../../', import.meta.url));

/**
 * How to run this same `rollcall` from where the user is: `rollcall` when the
 * one on PATH is this one (installed), `npx rollcall` when a node_modules/.bin
 * above the working directory links to it (a checkout, or a project that
 * installed it), else `node <script>` as it was started.
 */
export function rollcallInvocation(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd(), script = process.argv[1] ?? ''): string {
  const root = real(PACKAGE);
  const ours = (file: string) => root !== undefined && real(file)?.startsWith(root) === true;
  if ((env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && ours(join(dir, 'rollcall')))) return 'rollcall';
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (ours(join(dir, 'node_modules', '.bin', 'rollcall'))) return 'npx rollcall';
    if (dirname(dir) === dir) break;
  }
  const rel = relative(cwd, script);
  return `node ${rel === '' || rel.startsWith('..') || isAbsolute(rel) ? script : rel}`;
}

/** The command that attaches `rollcall watch` to the demo's cluster through the configuration file it leaves for it. */
export function watchCommand(configFile: string, invocation = rollcallInvocation()): string {
  return `${invocation} watch --config ${configFile}`;
}

function real(path: string): string | undefined {
  try {
    const resolved = realpathSync(path);
    return path.endsWith(sep) ? resolved + sep : resolved;
  } catch {
    return undefined;
  }
}
