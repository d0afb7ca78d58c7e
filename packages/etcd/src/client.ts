import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import etcd3 from 'etcd3';
import { handleWhen, noop, retry, type IPolicy } from 'cockatiel';
import { type Clock, ConfigurationError, type RegistryError, systemClock, UnavailableError } from '@rollcall/core';
import { prefixEnd } from './codec.js';
import type { EtcdOptions } from './options.js';
import { BACKEND } from './errors.js';

// The slice of etcd3's low-level clients the store uses: the raw KV, Watch and
// Lease RPCs, so versions, revisions and compaction signals come straight from etcd.

export interface KeyValue {
  key: Buffer;
  create_revision: string;
  mod_revision: string;
  value: Buffer;
}
interface ResponseHeader {
  revision: string;
}
interface RangeRequest {
  key: Buffer;
  range_end?: Buffer;
  limit?: number;
  keys_only?: boolean;
}
interface RangeResponse {
  header: ResponseHeader;
  kvs: KeyValue[];
}
export type PutRequest = { key: Buffer; value: Buffer; lease?: string; ignore_lease?: boolean };
export type RequestOp = { request_range: RangeRequest } | { request_put: PutRequest } | { request_delete_range: { key: Buffer } };
interface TxnRequest {
  compare: { key: Buffer; target: 'Create' | 'Mod'; result: 'Equal' | 'Less'; create_revision?: number; mod_revision?: string }[];
  success: RequestOp[];
  failure: RequestOp[];
}
export interface TxnResponse {
  header: ResponseHeader;
  succeeded: boolean;
  responses: { response_range?: RangeResponse }[];
}
export interface WatchResponse {
  header: ResponseHeader;
  created: boolean;
  canceled: boolean;
  compact_revision: string;
  cancel_reason: string;
  events: { type: 'Put' | 'Delete'; kv: KeyValue }[];
}
/** A bidirectional gRPC stream as etcd3 hands it out. */
export interface GrpcStream<Request, Response> {
  write(request: Request): unknown;
  on(event: 'data', listener: (response: Response) => void): GrpcStream<Request, Response>;
  on(event: 'error', listener: (error: Error) => void): GrpcStream<Request, Response>;
  on(event: 'end', listener: () => void): GrpcStream<Request, Response>;
  removeAllListeners(): GrpcStream<Request, Response>;
  end(): unknown;
  cancel(): void;
}
export type WatchStream = GrpcStream<{ create_request: { key: Buffer; range_end: Buffer; start_revision: string; progress_notify: boolean } } | { progress_request: Record<string, never> }, WatchResponse>;
export type KeepAliveStream = GrpcStream<{ ID: string }, { ID: string; TTL: string }>;
type CallOptions = { deadline?: number };

/** The etcd3 client as the store uses it. An `Etcd3` instance fits. */
export interface EtcdClientSlice {
  readonly kv: {
    range(request: RangeRequest, options?: CallOptions): Promise<RangeResponse>;
    txn(request: TxnRequest, options?: CallOptions): Promise<TxnResponse>;
  };
  readonly watchClient: { watch(options?: CallOptions): Promise<WatchStream> };
  readonly leaseClient: {
    leaseGrant(request: { TTL: number; ID: number }, options?: CallOptions): Promise<{ ID: string; TTL: string }>;
    leaseRevoke(request: { ID: string }, options?: CallOptions): Promise<unknown>;
    leaseKeepAlive(options?: CallOptions): Promise<KeepAliveStream>;
  };
  close(): void;
}

/** Ends a stream without the cancellation's error counting against the host. */
export function stopStream<Request, Response>(stream: GrpcStream<Request, Response>): void {
  stream.removeAllListeners();
  // The cancellation's error must find a listener; end() first so etcd3 does not count it as a host failure.
  stream.on('error', () => {});
  stream.end();
  stream.cancel();
}

function readPem(key: string, file: string | undefined, kind: 'certificate' | 'private key'): Buffer | undefined {
  if (file === undefined) return undefined;
  const fail = (why: string, cause: unknown): never => {
    throw new ConfigurationError(`registry.etcd.${key}: ${JSON.stringify(file)} ${why}`, { key: `registry.etcd.${key}`, backend: BACKEND, cause });
  };
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    return fail(`cannot be read: ${(err as Error).message}`, err);
  }
  // gRPC accepts garbage here and fails later with an unhelpful handshake error: check it now.
  try {
    if (kind === 'certificate') new X509Certificate(pem);
    else createPrivateKey(pem);
  } catch (err) {
    fail(`is not a PEM ${kind}: ${(err as Error).message}`, err);
  }
  return pem;
}

function isUnavailable(err: Error): boolean {
  return err instanceof etcd3.GRPCUnavailableError;
}

/**
 * Builds the etcd3 client from the options: endpoints, TLS material (read and
 * checked now), credentials, keepalive, and a retry on the next endpoint only
 * when one is unreachable. Contacts nothing. INVALID_CONFIG for TLS files that
 * cannot be used.
 */
export function createEtcdClient(options: EtcdOptions, requestTimeoutMs: number): EtcdClientSlice {
  const tls = options.tls;
  const ca = readPem('tls.caFile', tls?.caFile, 'certificate');
  const cert = readPem('tls.certFile', tls?.certFile, 'certificate');
  const key = readPem('tls.keyFile', tls?.keyFile, 'private key');
  const retries = options.endpoints.length - 1;
  try {
    return new etcd3.Etcd3({
      hosts: [...options.endpoints],
      // etcd3's types want a CA; gRPC takes null for "the system's CAs".
      ...(ca || cert ? { credentials: { rootCertificate: ca ?? (null as unknown as Buffer), privateKey: key, certChain: cert } } : {}),
      ...(options.username !== undefined ? { auth: { username: options.username, password: options.password ?? '' } } : {}),
      grpcOptions: {
        'grpc.keepalive_time_ms': options.keepaliveIntervalMs,
        'grpc.keepalive_timeout_ms': Math.max(1000, requestTimeoutMs),
        // etcd counts pings without an open stream as abuse and closes the connection.
        'grpc.keepalive_permit_without_calls': 0,
        // A restarted etcd is reached again within a second, not after gRPC's default backoff of up to 2 minutes.
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 1000,
      },
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: grpcDeadline(requestTimeoutMs) }),
      faultHandling: {
        // No circuit breaker: it would refuse calls for seconds after etcd is back.
        host: () => noop,
        // Another member is tried only when this one is unreachable, never after a timeout (the write may have landed).
        global: retries > 0 ? (retry(handleWhen(isUnavailable), { maxAttempts: retries }) as IPolicy) : noop,
      },
    }) as unknown as EtcdClientSlice;
  } catch (err) {
    // gRPC refuses TLS material it cannot use (e.g. a key that does not match its certificate).
    throw new ConfigurationError(`registry.etcd.tls: the TLS files cannot be used together: ${(err as Error).message}`, { key: 'registry.etcd.tls', backend: BACKEND, cause: err });
  }
}

/**
 * The gRPC deadline `ms` from now. gRPC judges a deadline against this
 * machine's real clock, so it is taken from the system clock's wall time,
 * never an injected one (a skewed or manual clock would make every call late).
 */
export function grpcDeadline(ms: number): number {
  return systemClock.wallNow().getTime() + ms;
}

/**
 * Proves the client works: one read of `base`'s range must succeed within
 * `dialTimeoutMs` on `clock`, so unreachable endpoints, refused credentials and a missing
 * permission fail at connect, typed. `mapError` maps a native failure.
 */
export function proveConnection(client: EtcdClientSlice, base: Buffer, options: EtcdOptions, mapError: (err: unknown) => RegistryError, clock: Clock): Promise<void> {
  const endpoints = options.endpoints.join(', ');
  return new Promise<void>((resolve, reject) => {
    const timer = clock.setTimeout(
      () => reject(new UnavailableError(`could not connect to etcd at ${endpoints} within ${options.dialTimeoutMs} ms (registry.etcd.dialTimeoutMs)`, { backend: BACKEND })),
      options.dialTimeoutMs,
    );
    client.kv.range({ key: base, range_end: prefixEnd(base), limit: 1, keys_only: true }, { deadline: grpcDeadline(options.dialTimeoutMs) }).then(
      () => {
        timer.cancel();
        resolve();
      },
      (err: unknown) => {
        timer.cancel();
        if (err instanceof etcd3.GRPCNotImplementedError) {
          return reject(new UnavailableError(`${endpoints} answered, but is not an etcd v3 endpoint (etcd's client URL, usually port 2379): ${(err as Error).message}`, { backend: BACKEND, cause: err }));
        }
        const mapped = mapError(err);
        if (mapped.code !== 'UNAVAILABLE') return reject(mapped);
        // gRPC ends its message with an empty "Resolution note:" when it has none; and a refusal is not a timeout, so only a deadline says "within".
        const native = (err as Error).message.replace(/\.?\s*Resolution note:\s*$/, '');
        const deadline = /deadline exceeded/i.test(native);
        reject(new UnavailableError(`could not connect to etcd at ${endpoints}${deadline ? ` within ${options.dialTimeoutMs} ms` : ''}: ${native}`, { backend: BACKEND, cause: err }));
      },
    );
  });
}
