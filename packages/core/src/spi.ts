/**
 * `@rollcall/core/spi`: what a backend author implements and needs — the
 * record-store SPI, the record and its codec, keys, and the plugin with its
 * option schema — and, so that one import is enough, what backends take from
 * `@rollcall/core`: the errors they map native failures onto, Clock and Logger.
 * Loading plugins and reaching a registry's store are `@rollcall/core/admin`.
 */
// The record store a backend implements.
export type { CorruptEntry, RecordKey, RecordList, RecordStore, ScopeOptions, StoredRecord, StoreSessionState, WatchEvent, WatchListener, WatchSubscription } from './store.js';
// The record, its codec and its limits.
export { formatMicroTime, parseRecordLiveness, parseTime, recordShapeProblem, UNKNOWN_HOLDER, type LeaseRecord, type RecordLiveness } from './lease-record.js';
export { recordFromJson, recordToJson } from './record-json.js';
export { assertPayloadSize } from './payload.js';
// Where each record lives.
export { electionKey, heartbeatKey, lockKey, memberKey, parseKey, type RecordKind } from './record-key.js';
// The pod liveness mode's optional store capabilities (registry.member.liveness=pod): readiness, needed; a role's members of one pod, optional.
export { podReadinessOf, type PodReadinessCapable, type PodReadinessSource, type PodReadinessWatch } from './pod-readiness.js';
export { podMemberListingOf, type PodMemberListing } from './pod-member-listing.js';
// Retrying and delaying on the injected clock: what a backend calls for a reconnect or a re-watch.
export { Backoff, type BackoffOptions } from './backoff.js';
export { DelayQueue, type DelayQueueOptions } from './delay-queue.js';
// The plugin `registry.type` loads, and its section.
export type { PluginContext, RegistryPlugin } from './plugin.js';
export type { OptionSchema, OptionSpec } from './config/option-schema.js';
export { pluginContext, resolvePluginOptions, type PluginOptionsInput, type StoreFactoryOptions } from './config/plugin-options.js';
// Also in `@rollcall/core`.
export {
  ConfigurationError,
  CorruptRecordError,
  ErrorCode,
  hasCode,
  InvalidArgumentError,
  PermissionError,
  RegistryError,
  RevisionTooOldError,
  SchemaMismatchError,
  StoreConflictError,
  UnavailableError,
} from './errors.js';
export { systemClock, type Clock, type Timer } from './clock.js';
export { silentLogger, type Logger } from './logger.js';
export type { JsonValue } from './lease-record.js';
