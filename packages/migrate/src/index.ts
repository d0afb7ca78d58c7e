/**
 * `@rollcall/migrate`: `registry.type=migrate`, one record store over two
 * backends, for a move between them by rolling restarts (docs/migrating.md).
 * Core loads it when `registry.type=migrate` is chosen, as it loads any backend.
 */
export { MigrateStore, type MigrateStoreOptions } from './migrate-store.js';
export { migratePlugin, registryPlugin, MIGRATE_TYPE, type MigrateOptions, type MigrateSide, type MigrateSideInput } from './migrate-plugin.js';
