/**
 * Prometheus's text exposition format, read back: for this repository's tests that scrape a
 * /metrics endpoint (`@rollcall/metrics`, `rollcall --metrics-port`) and
 * assert on what a Prometheus server would store.
 */
import { waitFor } from '@rollcall/conformance';

/** One sample line: `name{label="value",...} value`. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;

/** Every sample of `text`; comment lines (`# HELP`, `# TYPE`) and blank lines are skipped. Throws on a line that is not a sample. */
export function parsePrometheusText(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    LABEL.lastIndex = 0;
    let consumed = 0;
    for (let label = LABEL.exec(body); label; label = LABEL.exec(body)) {
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      consumed = LABEL.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`labels not in Prometheus's format: ${JSON.stringify(line)}`);
    const raw = match[3]!;
    samples.push({ name: match[1]!, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. Throws when several match. */
export function sampleValue(samples: readonly MetricSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}: name more labels`);
  return found[0]?.value;
}

/** GETs `url` (a /metrics endpoint) and parses it; throws on a status other than 200. */
export async function scrapeMetrics(url: string): Promise<MetricSample[]> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return parsePrometheusText(await res.text());
}

/** Scrapes `url` until `test(samples)` holds and resolves with those samples; rejects after `timeoutMs` with `what` and the last scrape's rollcall_ samples. */
export function scrapeUntil(url: string, what: string, test: (samples: MetricSample[]) => boolean, timeoutMs: number): Promise<MetricSample[]> {
  let last: MetricSample[] = [];
  return waitFor(
    async () => (test((last = await scrapeMetrics(url))) ? last : undefined),
    timeoutMs,
    () => `${what}; last scrape:\n${last.filter((s) => s.name.startsWith('rollcall_')).map((s) => `${s.name}${JSON.stringify(s.labels)} ${s.value}`).join('\n')}`,
  );
}
