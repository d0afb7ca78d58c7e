/**
 * `@rollcall/core`: what applications call. Backend authors find the record-store
 * SPI, codecs, keys and option schemas in `@rollcall/core/spi`; tests find a
 * manual clock and a memory store that can be cut off in `@rollcall/core/testing`.
 */
export { createRegistry, type RegistryRuntime } from './create-registry.js';
export { shutdownOnSignals, DEFAULT_SHUTDOWN_DEADLINE_MS, type Closable, type ShutdownHandle, type ShutdownOptions, type ShutdownResult } from './shutdown-on-signals.js';
export { type BackendActivity, type BackendActivityListener, type BackendOperation } from './backend-activity.js';
export { observeBackend } from './observe-backend.js';
export { Registry, type AnnounceOptions, type LockOptions, type RegistryEvents, type Subscription } from './registry.js';
export { resolveConfig, resolveRegistryConfig, loadRegistryConfig, CORE_OPTIONS, type ConfigSource, type EnvRegistryConfig, type FlatRegistryConfig, type LoadedRegistryConfig, type RegistryConfig, type RegistryConfigInput, type ResolvedRegistryConfig, type CoreConfigInput, type BackendConfigInput } from './config/registry-config.js';
export { configFromEnv, configLayers, describeSource, envLayer, fileLayer, readLayers, type ConfigLayer, type ConfigLayerKind, type LayeredConfig, type ValueSource } from './config/config-layers.js';
export { resolveOptions, type ResolvedOption, type ResolvedOptions, type ResolveSpec } from './config/option-resolver.js';
export type { BackendSection, RegistryBackendSections, RegistryType } from './config/backend-sections.js';
export type { PluginOptionsInput } from './config/plugin-options.js';
export { envName } from './config/option-schema.js';
export { DEFAULT_LEASE_TIMING, DEFAULT_MEMBER_TIMING, DEFAULT_REQUEST_TIMEOUT_MS, type LeaseTiming, type MemberTiming } from './timing.js';
export { MEMBER_AFTER_LOST, MEMBER_LIVENESS_MODES, type MemberAfterLost, type MemberConfig, type MemberLiveness } from './member-liveness.js';
export type { ConnectionEvents, ConnectionState } from './connection-monitor.js';
export type { Leadership, LeadershipEvents } from './leadership.js';
export type { LeaderObserver, LeaderInfo, LeaderObserverEvents } from './leader-observer.js';
export type { HolderInfo, LeaseEvent, LeaseInfo, LeaseListener } from './lease-info.js';
export type { LockHandle } from './distributed-lock.js';
export type { MemberHandle, MemberHandleEvents, MemberLostEvent, MemberReannouncedEvent } from './member-handle.js';
export type { MemberLossReason } from './member-validity.js';
export type { Member, MemberEvent, MemberListener, MemberRemovalReason } from './member.js';
export type { LeaseLossReason } from './lease-holder.js';
export type { DeadIncarnation, Failover, FailoverEvents, FailoverHandler, FailoverLeadership, FailoverOptions, FailoverReason, FailoverRun } from './failover.js';
export type { JsonValue } from './lease-record.js';
export * from './errors.js';
export { systemClock, type Clock, type Timer } from './clock.js';
export { silentLogger, type Logger, type LogFn } from './logger.js';
export { memoryPlugin, type MemoryPluginOptions } from './memory/memory-plugin.js';
/** The memory plugin under the name core's loader looks for. */
export { memoryPlugin as registryPlugin } from './memory/memory-plugin.js';
