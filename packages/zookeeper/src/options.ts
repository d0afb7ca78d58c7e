import type { PluginOptionsInput } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';

/** `registry.zookeeper.tls.*`: TLS to ZooKeeper's `secureClientPort`. */
export interface ZookeeperTlsOptions {
  /** Connect over TLS; the connect string then names the servers' `secureClientPort`s. Default false. */
  readonly enabled: boolean;
  /** PEM file of the CA that signed the servers' certificates. Default: the system's CAs. */
  readonly caFile?: string;
  /** PEM file of a client certificate, for servers that require one (`ssl.clientAuth=need`, their default). Needs `keyFile`. */
  readonly certFile?: string;
  /** PEM file of the client certificate's key. Needs `certFile`. */
  readonly keyFile?: string;
  /** The name the servers' certificates must carry. Default: each server's host from the connect string. */
  readonly servername?: string;
  /** Refuse a server whose certificate does not verify. Default true; false is warned at every connect. */
  readonly rejectUnauthorized: boolean;
}

/** The `registry.zookeeper.*` keys, validated and frozen. */
export interface ZookeeperOptions {
  /**
   * The ZooKeeper connect string: one or more `host:port` pairs separated by
   * commas, optionally followed by a chroot, e.g. `zk1:2181,zk2:2181,zk3:2181/apps/orders`.
   * Required. A chroot must already exist on the server.
   */
  readonly connectString: string;
  /**
   * The znode under which every cluster keeps its records: `<root>/<cluster>/<record>`.
   * Relative to the chroot when there is one. Default `/rollcall`.
   */
  readonly root: string;
  /**
   * Session timeout asked of the server, milliseconds; the server clamps it to
   * its own bounds (2 to 20 ticks) and the negotiated value is the one enforced.
   * Once this long has passed without the server answering, the session counts
   * as lost: leaders and lock holders step down and a new session begins.
   * Keep it below the election and lock lease durations. Default 10000.
   */
  readonly sessionTimeoutMs: number;
  /**
   * How long `connect` waits for the first session before failing with
   * UNAVAILABLE, milliseconds. Default 10000.
   */
  readonly connectTimeoutMs: number;
  /** Digest authentication; absent: no authentication, and created znodes are open to anyone (allowed only with `openAcl`). */
  readonly auth?: {
    /** The digest user name. */
    readonly username: string;
    /** The digest password. Secret: never logged or shown in an error. */
    readonly password: string;
  };
  /**
   * With `auth`: also let every identity read the records (`world:anyone` READ)
   * while only this digest identity may change them. Default false: read and
   * write for this identity only.
   */
  readonly worldReadable: boolean;
  /**
   * Without `auth`: create znodes open to anyone (`world:anyone` ALL: any
   * client of the ensemble may change or delete them). Default false: a
   * registry that writes needs `auth`, or this set by name. A read-only
   * registry creates nothing and needs neither.
   */
  readonly openAcl: boolean;
  /** TLS; off by default, when traffic and the digest password cross the network in clear. */
  readonly tls: ZookeeperTlsOptions;
}

const HOST_PORT = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/;
const SEGMENT = /^[^/\u0000-\u001f\u007f-\u009f]+$/;

/** A problem with a ZooKeeper path (absolute, no empty, `.` or `..` segment, no trailing slash), or undefined. */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must start with /';
  if (path === '/') return undefined;
  if (path.endsWith('/')) return 'must not end with /';
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') return 'has an empty segment (//)';
    if (segment === '.' || segment === '..') return `has a ${segment} segment`;
    if (!SEGMENT.test(segment)) return `segment ${JSON.stringify(segment)} has a control character`;
  }
  return undefined;
}

/** Splits and checks a connect string; returns the problem, or the hosts and the chroot. */
export function parseConnectString(value: string): { problem: string } | { hosts: string[]; chroot: string | undefined } {
  const slash = value.indexOf('/');
  const hostPart = slash < 0 ? value : value.slice(0, slash);
  const chroot = slash < 0 ? undefined : value.slice(slash);
  const hosts = hostPart.split(',').map((h) => h.trim());
  if (hosts.length === 0 || hosts.some((h) => h === '')) return { problem: 'expected host:port[,host:port...][/chroot]' };
  for (const host of hosts) {
    const match = HOST_PORT.exec(host);
    if (!match) return { problem: `${JSON.stringify(host)} is not host:port` };
    const port = Number(match[1]);
    if (port < 1 || port > 65535) return { problem: `port ${port} is out of range` };
  }
  if (chroot !== undefined) {
    if (chroot === '/') return { hosts, chroot: undefined };
    const problem = pathProblem(chroot);
    if (problem) return { problem: `the chroot ${JSON.stringify(chroot)} ${problem}` };
  }
  return { hosts, chroot };
}

const nonEmpty = (v: string) => (v === '' ? 'must not be empty' : undefined);

/** The option schema core validates `registry.zookeeper.*` against. */
export const zookeeperOptions: OptionSchema = {
  connectString: {
    type: 'string',
    required: true,
    doc: 'ZooKeeper connect string: host:port[,host:port...][/chroot]. The chroot must exist.',
    check: (value) => {
      const parsed = parseConnectString(value);
      return 'problem' in parsed ? parsed.problem : undefined;
    },
  },
  root: {
    type: 'string',
    default: '/rollcall',
    doc: 'Znode under which each cluster keeps its records (<root>/<cluster>/...), relative to the chroot.',
    check: (value) => (value === '/' ? 'must not be / itself' : pathProblem(value)),
  },
  sessionTimeoutMs: {
    type: 'integer',
    default: 10_000,
    min: 1000,
    max: 600_000,
    doc: 'Session timeout asked of the server, milliseconds; past it without an answer the session is lost.',
  },
  connectTimeoutMs: {
    type: 'integer',
    default: 10_000,
    min: 100,
    max: 600_000,
    doc: 'How long connecting waits for the first session before failing with UNAVAILABLE, milliseconds.',
  },
  'auth.username': { type: 'string', doc: 'Digest user name; with auth.password, created znodes get this identity as their ACL.', check: (v) => (v === '' || v.includes(':') ? 'must be non-empty and contain no colon' : undefined) },
  'auth.password': { type: 'string', secret: true, doc: 'Digest password (secret).', check: (v) => (v === '' ? 'must not be empty' : undefined) },
  worldReadable: { type: 'boolean', default: false, doc: 'With auth: every identity may read the records (world:anyone READ); only this identity may change them.' },
  openAcl: { type: 'boolean', default: false, doc: 'Without auth: create znodes open to anyone (world:anyone ALL). Needed, by name, for a registry that writes without auth.' },
  'tls.enabled': { type: 'boolean', default: false, doc: "Connect over TLS, to the servers' secureClientPort." },
  'tls.caFile': { type: 'string', doc: "PEM file of the CA of the servers' certificates; default: the system CAs.", check: nonEmpty },
  'tls.certFile': { type: 'string', doc: 'PEM file of a client certificate; needs tls.keyFile.', check: nonEmpty },
  'tls.keyFile': { type: 'string', doc: "PEM file of the client certificate's key; needs tls.certFile.", check: nonEmpty },
  'tls.servername': { type: 'string', doc: "Name the servers' certificates must carry; default: each host of the connect string.", check: nonEmpty },
  'tls.rejectUnauthorized': { type: 'boolean', default: true, doc: 'Refuse a server certificate that does not verify (false is warned at every connect).' },
};

/** Cross-key rules: user name and password together, TLS files only with TLS on, a certificate with its key. */
export function validateZookeeperOptions(options: ZookeeperOptions): { key: string; rule: string } | undefined {
  const auth = options.auth as Partial<NonNullable<ZookeeperOptions['auth']>> | undefined;
  if (auth && (auth.username === undefined) !== (auth.password === undefined)) {
    const missing = auth.username === undefined ? 'auth.username' : 'auth.password';
    return { key: missing, rule: 'auth.username and auth.password are set together' };
  }
  const tls = options.tls;
  for (const key of ['caFile', 'certFile', 'keyFile', 'servername'] as const) {
    if (tls?.[key] !== undefined && !tls.enabled) return { key: `tls.${key}`, rule: 'is set but tls.enabled is false' };
  }
  if (tls && (tls.certFile === undefined) !== (tls.keyFile === undefined)) return { key: tls.certFile === undefined ? 'tls.certFile' : 'tls.keyFile', rule: 'tls.certFile and tls.keyFile go together' };
  if (auth && options.openAcl) return { key: 'openAcl', rule: 'is for a registry without auth; with auth.username the znodes belong to that identity' };
  return undefined;
}

declare module '@rollcall/core' {
  /** `zookeeper: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    zookeeper: PluginOptionsInput<ZookeeperOptions>;
  }
}
