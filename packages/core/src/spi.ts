/**
 * `@rollcall/core/spi`: what a backend author implements or calls, and nothing
 * else — the record store and what it declares it supports, the record and its
 * codec, keys, the optional capabilities a store may offer, and the plugin with
 * its options. The errors a backend maps native failures onto, `Clock` and
 * `Logger` are `@rollcall/core`'s; loading plugins and reading a store's
 * capabilities are `@rollcall/core/admin`'s.
 */
// The record store a backend implements, and the manifest of what else it does.
export type { CorruptEntry, RecordKey, RecordList, RecordStore, ScopeOptions, StoredRecord, StoreSessionState, StoreSupports, WatchEvent, WatchListener, WatchSubscription } from './store.js';
// The record, its codec and its limits.
export { formatMicroTime, parseCreatedAs, parseRecordLiveness, parseTime, recordShapeProblem, UNKNOWN_HOLDER, type LeaseRecord } from './lease-record.js';
export { recordFromJson, recordToJson } from './record-json.js';
export { assertPayloadSize } from './payload.js';
// Where each record lives.
export { electionKey, heartbeatKey, lockKey, memberKey, parseKey, type RecordKind } from './record-key.js';
// The optional capabilities a store declares in `supports`: pod readiness and one pod's members (registry.member.liveness=pod), an access review (rollcall doctor).
export type { PodReadinessSource, PodReadinessWatch, SelfProbeAnswer } from './pod-readiness.js';
export type { PodMemberListing } from './pod-member-listing.js';
export type { AccessPermission, AccessReview } from './access-review.js';
// Retrying and delaying on the injected clock: what a backend calls for a reconnect or a re-watch.
export { Backoff, type BackoffOptions } from './backoff.js';
export { DelayQueue, type DelayQueueOptions } from './delay-queue.js';
// Typed events whose throwing listener is logged and kept from the emitter: a backend's session events.
export { Emitter } from './emitter.js';
// The plugin `registry.type` loads, and its section.
export type { PluginContext, RegistryPlugin } from './plugin.js';
export type { OptionSchema } from './config/option-schema.js';
export { pluginContext, type StoreFactoryOptions } from './config/plugin-options.js';
