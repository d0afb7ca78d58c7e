import { installLine, missingPackage } from '@rollcall/core/admin';
import { CliError, ExitCode } from './errors.js';

type PodRunnerModule = typeof import('@rollcall/pod-runner');

/**
 * @rollcall/pod-runner, loaded when a command needs it: it is an optional peer
 * of the CLI, so a missing one is PLUGIN_NOT_INSTALLED with the install line.
 */
export async function loadPodRunner(command: string): Promise<PodRunnerModule> {
  try {
    return await import('@rollcall/pod-runner');
  } catch (err) {
    const missing = missingPackage(err);
    if (missing === undefined) throw err;
    throw new CliError(
      'PLUGIN_NOT_INSTALLED',
      missing === '@rollcall/pod-runner' ? `${command} needs the package @rollcall/pod-runner, which is not installed. Run: ${installLine(['@rollcall/pod-runner'])}` : `${command}: @rollcall/pod-runner is installed, but its dependency ${missing} is not. Run: ${installLine([missing])}`,
      ExitCode.CONFIG,
      'a package goes where rollcall is: into the project whose rollcall you run (npx rollcall), or beside a global rollcall',
    );
  }
}
