/**
 * `@rollcall/metrics`: Prometheus metrics (prom-client) derived from a
 * Rollcall registry's events and backend activity, and a small /metrics
 * server for processes that have none.
 */
export { registerRollcallMetrics, type RollcallMetrics } from './register.js';
export { DEFAULT_REQUEST_BUCKETS_SECONDS, type RollcallMetricsOptions } from './options.js';
export { METRICS, METRIC_NAMES, POD_RUNNER_METRICS, ALL_METRICS, type MetricSpec } from './catalog.js';
export { registerPodRunnerMetrics, DEFAULT_PENDING_BUCKETS_SECONDS, type ObservablePodRunner, type PodRunnerMetrics, type PodRunnerMetricsOptions } from './pod-runner.js';
export { serveMetrics, type MetricsServer, type ServeMetricsOptions } from './serve.js';
