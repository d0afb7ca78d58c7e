/**
 * `@rollcall/tools/test-kit`: helpers this repository's own tests share that no
 * backend's test needs (so they are not in the published `@rollcall/conformance`).
 */
export { parsePrometheusText, sampleValue, scrapeMetrics, scrapeUntil, type MetricSample } from './prometheus-text.js';
