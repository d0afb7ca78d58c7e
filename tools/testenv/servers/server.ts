import type { TestEnv } from '../env-file.js';
import type { Unit } from '../unit.js';

export type EnvSection = Exclude<keyof TestEnv, 'schemaVersion' | 'root'>;

/** One server the environment offers (`npm run testenv -- up <name>`), made of units. */
export interface Server {
  /** CLI name, e.g. "zookeeper-ensemble". */
  name: string;
  /** Its section in the env file. */
  envKey: EnvSection;
  /** Its processes, in start order. */
  units(): Unit[];
  /** Installs what it needs (Debian packages, built binaries); idempotent. */
  install(): Promise<void>;
  /** Starts the units that are not running and does one-time setup; idempotent. */
  up(): Promise<void>;
  /** Cleans up after its units stopped in a `down` (what no process holds: cgroups, markers). */
  afterDown?(): Promise<void>;
  /** Its env file section (endpoints and credentials). */
  describe(): Promise<NonNullable<TestEnv[EnvSection]>>;
}
