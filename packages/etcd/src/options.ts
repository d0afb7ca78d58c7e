import type { PluginOptionsInput } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';

/** TLS files for `https://` endpoints. */
export interface EtcdTlsOptions {
  /**
   * PEM file of the CA that signed the servers' certificates
   * (`registry.etcd.tls.caFile`). Default: the system's trusted CAs.
   */
  readonly caFile?: string;
  /** PEM file of the client certificate, for client-certificate authentication (`registry.etcd.tls.certFile`). Needs `keyFile`. */
  readonly certFile?: string;
  /** PEM file of the client certificate's private key (`registry.etcd.tls.keyFile`). Needs `certFile`. */
  readonly keyFile?: string;
}

/** `registry.etcd.*`: how to reach etcd and where the records live. */
export interface EtcdOptions {
  /**
   * Client URLs of the etcd members, `http://host:port` or `https://host:port`
   * (all one scheme). A call that finds a member unreachable is retried on the
   * next one. Default `['http://127.0.0.1:2379']`.
   */
  readonly endpoints: readonly string[];
  /**
   * Key prefix of every record: a cluster's records are the keys under
   * `<prefix>/<cluster>/`. Starts with `/`, no trailing `/`. Default `/rollcall`.
   */
  readonly prefix: string;
  /** etcd user for password authentication. Needs `password`. Default: none (no authentication). */
  readonly username?: string;
  /** Password of `username`. Never logged, never in an error message. */
  readonly password?: string;
  /**
   * Send `username` and `password` to `http://` endpoints, in clear on the
   * network. Default false: credentials need `https://` endpoints, and a
   * configuration with them over http:// is INVALID_CONFIG. For a loopback or
   * otherwise trusted network.
   */
  readonly allowPlaintextCredentials: boolean;
  readonly tls?: EtcdTlsOptions;
  /**
   * Bound on connecting: the first call, which proves an endpoint answers and
   * the credentials and permissions hold, must succeed within it, or `connect`
   * fails with UNAVAILABLE. Milliseconds. Default 5000.
   */
  readonly dialTimeoutMs: number;
  /**
   * Interval of gRPC keepalive pings on open streams, so a watch on a dead
   * connection ends (and resumes elsewhere) instead of waiting forever.
   * etcd refuses pings more often than every 5 s by default. Milliseconds. Default 10000.
   */
  readonly keepaliveIntervalMs: number;
  /**
   * Binds member keys to an etcd lease of this many seconds, kept alive by the
   * store, so etcd itself deletes the members of a process that stopped (even
   * when no one observes their role). 0 turns it off. Liveness is still core's,
   * by its own deadlines: set it to at least 1.5 × `registry.member.renewDeadlineMs`
   * in seconds (23 with the defaults) and at least `registry.member.leaseDurationMs`.
   * The store keeps the lease alive every third of its TTL, so a process cut off
   * just before a keep-alive loses its keys two thirds of a TTL after its last
   * one; below that bound etcd can delete a member's key before the member is
   * `lost` by its own clock, and peers see it `removed` first (the member then
   * learns it at its next heartbeat: `lost`, `deleted`). Not checked against
   * the core keys (a plugin's section is validated alone). Seconds. Default 0.
   */
  readonly memberLeaseSeconds: number;
  /**
   * Largest payload a record may carry, in bytes of UTF-8 JSON. Keep it under
   * the server's `--max-request-bytes` (1.5 MiB by default). Default 1048576.
   */
  readonly maxPayloadBytes: number;
}

/**
 * An endpoint as a message may show it: anything up to the last `@` after the
 * scheme is credentials (or may be: a malformed URL is shown too), so it goes.
 */
function shown(endpoint: string): string {
  if (!endpoint.includes('@')) return JSON.stringify(endpoint);
  const scheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.exec(endpoint)?.[0] ?? '';
  return JSON.stringify(`${scheme}<credentials>${endpoint.slice(endpoint.lastIndexOf('@'))}`);
}

/** Why `endpoint` is not a usable etcd client URL, or undefined. */
function endpointProblem(given: string): string | undefined {
  const endpoint = shown(given);
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    return `${endpoint} is not a URL (expected http://host:port or https://host:port)`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${endpoint} must start with http:// or https://`;
  if (!url.port) return `${endpoint} has no port`;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) return `${endpoint} must have no path, query or fragment`;
  if (url.username || url.password) return 'an endpoint must not carry credentials; use registry.etcd.username and registry.etcd.password';
  return undefined;
}

function prefixProblem(prefix: string): string | undefined {
  if (!prefix.startsWith('/')) return 'must start with /';
  if (prefix.length < 2) return 'must name at least one path segment, e.g. /rollcall';
  if (prefix.endsWith('/')) return 'must not end with /';
  if (prefix.includes('//')) return 'must not contain an empty segment (//)';
  return undefined;
}

/** The `registry.etcd.*` keys. */
export const etcdOptions: OptionSchema = {
  endpoints: { type: 'list', default: ['http://127.0.0.1:2379'], doc: 'Client URLs of the etcd members, http:// or https:// (one scheme); comma-separated in the flat and environment forms.' },
  prefix: { type: 'string', default: '/rollcall', doc: 'Key prefix: a cluster\'s records are the keys under <prefix>/<cluster>/.', check: prefixProblem },
  username: { type: 'string', doc: 'etcd user for password authentication; needs password.', check: (v) => (v.length === 0 ? 'must not be empty' : undefined) },
  password: { type: 'string', secret: true, doc: 'Password of username; never logged.' },
  allowPlaintextCredentials: {
    type: 'boolean',
    default: false,
    doc: 'Send username and password to http:// endpoints, in clear on the network (a loopback or otherwise trusted network); without it credentials need https:// endpoints.',
  },
  'tls.caFile': { type: 'string', doc: 'PEM file of the CA that signed the etcd servers\' certificates; default: the system CAs.' },
  'tls.certFile': { type: 'string', doc: 'PEM file of the client certificate; needs tls.keyFile.' },
  'tls.keyFile': { type: 'string', doc: 'PEM file of the client certificate\'s key; needs tls.certFile.' },
  dialTimeoutMs: { type: 'integer', default: 5000, min: 1, doc: 'Bound on connecting (first call, credentials and permission check), milliseconds.' },
  keepaliveIntervalMs: { type: 'integer', default: 10_000, min: 5000, doc: 'gRPC keepalive ping interval on open streams, milliseconds (etcd refuses pings under 5000 by default).' },
  memberLeaseSeconds: { type: 'integer', default: 0, min: 0, max: 86_400, doc: 'Bind member keys to an etcd lease of this many seconds (0: off); at least 1.5 x registry.member.renewDeadlineMs and the member lease, in seconds.' },
  maxPayloadBytes: { type: 'integer', default: 1024 * 1024, min: 1, max: 1536 * 1024, doc: 'Largest record payload, bytes of UTF-8 JSON.' },
};

/** Cross-key rules; returns the broken rule and its key, relative to `registry.etcd.`. */
export function validateEtcdOptions(options: EtcdOptions): { key: string; rule: string } | undefined {
  if (options.endpoints.length === 0) return { key: 'endpoints', rule: 'needs at least one endpoint' };
  for (const endpoint of options.endpoints) {
    const problem = endpointProblem(endpoint);
    if (problem) return { key: 'endpoints', rule: problem };
  }
  const secure = options.endpoints.filter((e) => e.startsWith('https:')).length;
  if (secure > 0 && secure < options.endpoints.length) return { key: 'endpoints', rule: 'all endpoints must use the same scheme (all http:// or all https://)' };
  const tlsKey = (['caFile', 'certFile', 'keyFile'] as const).find((k) => options.tls?.[k] !== undefined);
  if (tlsKey && secure === 0) return { key: `tls.${tlsKey}`, rule: 'is set but every endpoint is http://; TLS needs https:// endpoints' };
  if (options.username !== undefined && options.password === undefined) return { key: 'password', rule: 'is required with registry.etcd.username' };
  if (options.password !== undefined && options.username === undefined) return { key: 'username', rule: 'is required with registry.etcd.password' };
  if (options.password !== undefined && secure === 0 && !options.allowPlaintextCredentials) {
    return { key: 'allowPlaintextCredentials', rule: 'is false, and username and password would cross the network in clear to http:// endpoints: use https:// endpoints (tls.caFile), or set registry.etcd.allowPlaintextCredentials=true on a trusted network' };
  }
  if (options.tls?.certFile !== undefined && options.tls.keyFile === undefined) return { key: 'tls.keyFile', rule: 'is required with registry.etcd.tls.certFile' };
  if (options.tls?.keyFile !== undefined && options.tls.certFile === undefined) return { key: 'tls.certFile', rule: 'is required with registry.etcd.tls.keyFile' };
  return undefined;
}

declare module '@rollcall/core' {
  /** `etcd: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    etcd: PluginOptionsInput<EtcdOptions>;
  }
}
