/**
 * `@rollcall/core/spi`: what a backend author needs — the record-store SPI, the
 * record codec, keys, option schemas and the plugin contract — and what backend
 * tests and tools use to reach a registry's store. Applications use
 * `@rollcall/core`; so do backends, for errors, Clock and Logger.
 */
export type { CorruptEntry, RecordKey, RecordList, RecordStore, ScopeOptions, StoredRecord, StoreSessionState, WatchEvent, WatchListener, WatchSubscription } from './store.js';
export { formatMicroTime, parseRecordLiveness, parseTime, payloadBytes, recordShapeProblem, type LeaseRecord, type RecordLiveness } from './lease-record.js';
export { recordFromJson, recordToJson } from './record-json.js';
export { electionKey, heartbeatKey, lockKey, memberKey, parseKey, reaperElection, type RecordKind } from './record-key.js';
export { assertIdentity, assertName, CLUSTER_RULE, IDENTITY_RULE, NAME_RULE } from './names.js';
export type { OptionSchema, OptionSpec } from './config/option-schema.js';
export { loadPlugin, missingPackage, PLUGIN_PACKAGES, type PluginContext, type RegistryPlugin } from './plugin.js';
export { registryStore } from './registry.js';
export { pluginContext, resolvePluginOptions, type PluginOptionsInput, type StoreFactoryOptions } from './config/plugin-options.js';
export { assertPayloadSize } from './payload.js';
export { MigrateStore, type MigrateStoreOptions } from './migrate/migrate-store.js';
export { loadMigratePlugin, migratePlugin, MIGRATE_TYPE, type BackendSection, type MigrateOptions } from './migrate/migrate-plugin.js';
export { mergeRecords, UNKNOWN_HOLDER } from './migrate/merge.js';
// The pod liveness mode's one optional store capability (registry.member.liveness=pod).
export { podReadinessOf, type PodReadinessCapable, type PodReadinessSource, type PodReadinessWatch } from './pod-readiness.js';
