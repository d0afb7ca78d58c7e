import type { MemoryPluginOptions } from '../memory/memory-plugin.js';
import type { BUILTIN_BACKENDS } from '../plugin.js';
import type { PluginOptionsInput } from './plugin-options.js';

/**
 * Each backend's section of the object form, keyed by its `registry.type`.
 * A backend package adds its own by module augmentation, so once it is part of
 * a program (any import from it, or `import type {} from '@rollcall/sqlite'`)
 * a misspelt key in its section fails to compile:
 *
 * ```ts
 * declare module '@rollcall/core' {
 *   interface RegistryBackendSections {
 *     sqlite: PluginOptionsInput<SqliteOptions>;
 *   }
 * }
 * ```
 *
 * A third-party backend (passed as `createRegistry(config, { plugins })`) or a
 * new built-in type adds itself the same way, which also makes its name a valid
 * `type`.
 */
export interface RegistryBackendSections {
  memory: PluginOptionsInput<MemoryPluginOptions>;
}

/** Every `registry.type` a configuration may name. */
export type RegistryType = keyof typeof BUILTIN_BACKENDS | keyof RegistryBackendSections;

/** A backend's section: its package's own type once augmented, else any keys (checked at run time). */
export type BackendSection<T extends RegistryType> = T extends keyof RegistryBackendSections ? RegistryBackendSections[T] : Readonly<Record<string, unknown>>;
