import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { envFilePath } from './paths.js';
import { TestenvError } from './errors.js';
import type { EnvSections } from '../catalog.js';

/** Version of the env file's shape; bumped on any incompatible change. */
export const ENV_SCHEMA_VERSION = 1;

/**
 * The one JSON file `up` writes (at <root>/env.json): every endpoint and credential. It has
 * a section for each server that is up (absent when not), keyed by the server's `envKey`
 * and typed by what its descriptor's `describe()` returns.
 */
export type TestEnv = { schemaVersion: number; root: string } & EnvSections;

/** Writes the env file atomically (readers never see a half-written file). */
export function writeTestEnv(env: TestEnv): string {
  const file = envFilePath();
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(env, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}

/**
 * Reads the env file written by `npm run testenv -- up` (or the vitest global setup).
 * Throws with the command to run when it is missing.
 */
export function readTestEnv(): TestEnv {
  const file = process.env.ROLLCALL_TESTENV_FILE ?? envFilePath();
  if (!existsSync(file)) {
    throw new TestenvError(`no env file at ${file}: run \`npm run testenv -- up\` or use the @rollcall/tools vitest global setup`);
  }
  const env = JSON.parse(readFileSync(file, 'utf8')) as TestEnv;
  if (env.schemaVersion !== ENV_SCHEMA_VERSION) {
    throw new TestenvError(`env file ${file} has schema ${env.schemaVersion}, expected ${ENV_SCHEMA_VERSION}: run \`npm run testenv -- up\` again`);
  }
  return env;
}

type Section = keyof EnvSections;

/** The env file's section of one server; throws naming the server when it is not up. */
export function requireTestEnv<K extends Section>(section: K): NonNullable<TestEnv[K]> {
  const env = readTestEnv();
  const value = env[section];
  if (!value) throw new TestenvError(`${section} is not up: run \`npm run testenv -- up\` (env file: ${process.env.ROLLCALL_TESTENV_FILE ?? envFilePath()})`);
  return value as NonNullable<TestEnv[K]>;
}
