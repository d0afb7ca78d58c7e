import { type Clock, type Logger, type Timer, UnavailableError } from '@rollcall/core';
import { grpcDeadline, stopStream, type EtcdClientSlice, type KeepAliveStream } from './client.js';
import { BACKEND } from './errors.js';

/**
 * The one etcd lease member keys are bound to, granted on the first member
 * create and kept alive every third of its TTL. It only lets etcd clean up
 * after a stopped process: nothing in Rollcall waits for its loss, as core
 * enforces its own deadlines. A lease etcd dropped is forgotten; the next
 * member create (a member whose key vanished is lost, and its next incarnation is a create) grants a new one.
 */
export class MemberLease {
  private id: string | undefined;
  private granting: Promise<string> | undefined;
  private stream: KeepAliveStream | undefined;
  private timer: Timer | undefined;
  private closed = false;

  constructor(
    private readonly client: EtcdClientSlice,
    private readonly ttlSeconds: number,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  current(): Promise<string> {
    if (this.closed) return Promise.reject(new UnavailableError('store closed', { backend: BACKEND }));
    if (this.id) return Promise.resolve(this.id);
    this.granting ??= this.client.leaseClient.leaseGrant({ TTL: this.ttlSeconds, ID: 0 }).then(
      (res) => {
        this.granting = undefined;
        this.id = res.ID;
        this.keepAliveEvery();
        this.logger.debug({ backend: BACKEND, lease: res.ID, ttlSeconds: this.ttlSeconds }, '[rollcall] [etcd] member lease granted');
        return res.ID;
      },
      (err: unknown) => {
        this.granting = undefined;
        throw err;
      },
    );
    return this.granting;
  }

  invalidate(id: string): void {
    if (this.id !== id) return;
    this.logger.debug({ backend: BACKEND, lease: id }, '[rollcall] [etcd] member lease gone');
    this.id = undefined;
    this.timer?.cancel();
    this.dropStream();
  }

  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.dropStream();
    const id = this.id;
    this.id = undefined;
    // Best effort: revoking deletes this process's member keys at once instead of after the TTL.
    if (id) await this.client.leaseClient.leaseRevoke({ ID: id }, { deadline: grpcDeadline(timeoutMs) }).catch(() => {});
  }

  /** A keep-alive every third of the TTL until the lease is gone or the store closes (closing cancels the timer). */
  private keepAliveEvery(): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(() => {
      this.keepAliveEvery();
      this.keepAlive();
    }, Math.max(500, (this.ttlSeconds * 1000) / 3));
  }

  private keepAlive(): void {
    const id = this.id;
    if (!id || this.closed) return;
    const send = (stream: KeepAliveStream) => stream.write({ ID: id });
    if (this.stream) return void send(this.stream);
    this.client.leaseClient.leaseKeepAlive().then(
      (stream) => {
        if (this.closed || this.stream) return void stopStream(stream);
        this.stream = stream;
        const drop = () => {
          if (this.stream === stream) this.stream = undefined;
          stopStream(stream);
        };
        stream
          .on('data', (res) => {
            if (Number(res.TTL) <= 0) this.invalidate(res.ID);
          })
          .on('error', drop)
          .on('end', drop);
        send(stream);
      },
      // The next tick tries again; the lease outlives a few missed pings.
      () => {},
    );
  }

  private dropStream(): void {
    if (this.stream) stopStream(this.stream);
    this.stream = undefined;
  }
}
