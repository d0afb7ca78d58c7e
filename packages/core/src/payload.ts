import { InvalidArgumentError } from './errors.js';
import { payloadBytes, type JsonValue } from './lease-record.js';

function jsonProblem(value: unknown, path: string, depth: number): string | undefined {
  if (depth > 64) return `${path} nests deeper than 64 levels`;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value}, which JSON cannot carry`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = jsonProblem(value[i], `${path}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) {
      const problem = jsonProblem(v, `${path}.${k}`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  return `${path} is ${value === undefined ? 'undefined' : typeof value === 'object' ? `a ${value.constructor?.name ?? 'non-plain object'}` : `a ${typeof value}`}, which is not JSON`;
}

/** Throws INVALID_ARGUMENT unless `payload` is plain JSON, and PAYLOAD_TOO_LARGE beyond `maxBytes`. @internal */
export function assertPayload(payload: unknown, maxBytes: number): asserts payload is JsonValue | undefined {
  if (payload === undefined) return;
  const problem = jsonProblem(payload, 'payload', 0);
  if (problem) throw new InvalidArgumentError(problem);
  assertPayloadSize(payload as JsonValue, maxBytes);
}

/**
 * Throws PAYLOAD_TOO_LARGE when `payload`, as UTF-8 JSON, is over `maxBytes`:
 * the one size check of the registry and of every store, so the message is the
 * same wherever the limit is hit. `backend` names the store in the message.
 */
export function assertPayloadSize(payload: JsonValue | undefined, maxBytes: number, backend?: string): void {
  const size = payloadBytes(payload);
  if (size > maxBytes) throw new InvalidArgumentError(`payload is ${size} bytes of JSON; the limit is ${maxBytes}`, { code: 'PAYLOAD_TOO_LARGE', backend });
}
