import type { Unit } from '../process/unit.js';
import type { GoComponent } from '../install/go-components.js';

/** A user and password in an env file section. */
export interface Credentials {
  user: string;
  password: string;
}

/** What `compactServer` resolves with: every revision (on Kubernetes: resourceVersion) below `revision` is gone. */
export interface Compaction {
  revision: number;
}

/** One server the environment offers (`npm run testenv -- up <name>`), made of units. */
export interface Server {
  /** CLI name, e.g. "zookeeper-ensemble". */
  readonly name: string;
  /** Its section in the env file, e.g. "zookeeperEnsemble". */
  readonly envKey: string;
  /** Its processes, in start order. */
  units(): Unit[];
  /** Installs what it needs (Debian packages, built binaries); idempotent. */
  install(): Promise<void>;
  /** Starts the units that are not running and does one-time setup; idempotent. */
  up(): Promise<void>;
  /** Cleans up after its units stopped in a `down` (what no process holds: cgroups, markers). */
  afterDown?(): Promise<void>;
  /** Its env file section (endpoints and credentials); its return type is the section's type. */
  describe(): Promise<unknown>;
  /** Discards its change history up to now (`compactServer`), for servers that keep one. */
  compact?(): Promise<Compaction>;
}

/**
 * Everything tools/ knows of one backend, in one file `servers/<name>.ts`: the generic
 * code (catalog, orchestration, env file, strays, `testenv build`) iterates over these.
 * Its vitest global setup, `@rollcall/tools/testenv/setup-<name>`, is `setup/setup-<name>.ts`:
 * `export default backendSetup(<name>Backend)`.
 */
export interface Backend {
  /** Names its file, `servers/<name>.ts`, and its global setup, `setup-<name>`. */
  readonly name: string;
  /** The servers it offers, in the order `up` lists them. */
  readonly servers: readonly Server[];
  /** Every port offset its units listen on (from the instance's base); no two backends may share one. */
  readonly portOffsets: readonly number[];
  /** Executables of its processes: a `down` stops one whose command line points into the root even without a pid file. */
  readonly executables: readonly string[];
  /** The Go programs it builds (`testenv build` builds every backend's). */
  readonly goComponents?: readonly GoComponent[];
}

/** Declares a server, keeping its literal name, env key and section type for the catalog's types. */
export function defineServer<const S extends Server>(server: S): S {
  return server;
}

/** Declares a backend, keeping its servers' types for the catalog's types. */
export function defineBackend<const B extends Backend>(backend: B): B {
  return backend;
}

/** Offsets `first`, `first + 1`, … for `count` ports (an ensemble's members). */
export function offsetRange(first: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => first + i);
}
