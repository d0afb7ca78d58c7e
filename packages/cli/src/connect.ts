import { createRegistry, type Registry } from '@rollcall/core';
import { resolveCliConfig, type Access, type CliConfig, type ConfigFlags } from './config.js';

/** Resolves the configuration, opens a registry on it (read-only where the backend can, for `read`), runs `fn`, and closes it again. */
export async function withRegistry<T>(flags: ConfigFlags, access: Access, fn: (registry: Registry, config: CliConfig) => Promise<T>): Promise<T> {
  const config = await resolveCliConfig(flags, process.env, {}, access);
  const registry = await createRegistry(config.source);
  try {
    return await fn(registry, config);
  } finally {
    await registry.close();
  }
}
