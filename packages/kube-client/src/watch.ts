import type { Logger, RegistryError, Timer } from '@rollcall/core';
import type { ApiClient } from './client.js';
import type { ObjectMeta } from './object-meta.js';
import { statusError, transportError, type KubeStatus, type RequestContext } from './errors.js';

export interface ResourceWatchOptions {
  client: ApiClient;
  logger: Logger;
  /** Collection path, e.g. `/apis/coordination.k8s.io/v1/namespaces/prod/leases`. */
  path: string;
  labelSelector: string;
  /** Also a field selector, e.g. `metadata.name=<name>` for one object. Default: none. */
  fieldSelector?: string;
  context: RequestContext;
  fromResourceVersion: string;
  /** Restart a stream silent this long, on the client's clock. Milliseconds. */
  silenceTimeoutMs: number;
  /** Server-side lifetime of one watch request. Seconds. */
  timeoutSeconds: number;
}

/** Any object the API server lists and watches: only its metadata is read here. */
export interface WatchedObject {
  metadata: ObjectMeta;
}

export interface ResourceWatchHandlers<T extends WatchedObject = WatchedObject> {
  object(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void;
  /** A BOOKMARK: nothing changed up to `resourceVersion`. */
  bookmark(resourceVersion: string): void;
  /** The watch ended for good: REVISION_TOO_OLD (410 Gone, as an HTTP status or an ERROR event) or UNAVAILABLE. */
  ended(error: RegistryError): void;
}

interface WatchEventLine {
  type?: string;
  object?: WatchedObject | KubeStatus;
}

/**
 * One watch of a collection that keeps itself alive: it resumes from its
 * last resourceVersion whenever a stream ends — the server's timeout, a dropped
 * connection, or silence longer than `silenceTimeoutMs` (bookmarks count as
 * life) — and ends only when the version is gone (410) or a fresh stream cannot
 * be opened. It never freezes silently, which is the failure mode of the
 * client library's informer this replaces. Any namespaced collection: Leases
 * and ConfigMaps for the registry, Pods for the pod runner.
 */
export class ResourceWatch<T extends WatchedObject = WatchedObject> {
  private resourceVersion: string;
  private abortStream: (() => void) | undefined;
  private silenceTimer: Timer | undefined;
  private closed = false;

  constructor(
    private readonly options: ResourceWatchOptions,
    private readonly handlers: ResourceWatchHandlers<T>,
  ) {
    this.resourceVersion = options.fromResourceVersion;
    void this.open();
  }

  close(): void {
    this.closed = true;
    this.silenceTimer?.cancel();
    this.abortStream?.();
  }

  private async open(): Promise<void> {
    if (this.closed) return;
    const { path, labelSelector, fieldSelector, timeoutSeconds, context } = this.options;
    const query = new URLSearchParams({
      watch: '1',
      labelSelector,
      ...(fieldSelector ? { fieldSelector } : {}),
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(timeoutSeconds),
    });
    let receivedAny = false;
    try {
      const stream = await this.options.client.stream(`${path}?${query}`, context, {
        line: (value) => {
          receivedAny = true;
          this.armSilence();
          this.onLine(value as WatchEventLine);
        },
        end: (error) => {
          this.silenceTimer?.cancel();
          this.abortStream = undefined;
          if (this.closed) return;
          this.options.logger.debug({ err: error, resourceVersion: this.resourceVersion }, '[rollcall] [kubernetes] watch stream ended; resuming');
          // A stream that delivered something was healthy: resume at once. One that died
          // straight away goes back to core, which retries with backoff.
          if (receivedAny || !error) void this.open();
          else this.end(transportError(error, context));
        },
      });
      if (this.closed) return stream.abort();
      this.abortStream = stream.abort;
      this.armSilence();
      this.handlers.bookmark(this.resourceVersion); // established: nothing missed up to where it resumed
    } catch (err) {
      this.end(err as RegistryError);
    }
  }

  private armSilence(): void {
    this.silenceTimer?.cancel();
    this.silenceTimer = this.options.client.clock.setTimeout(() => {
      this.options.logger.warn({ resourceVersion: this.resourceVersion, silenceMs: this.options.silenceTimeoutMs }, '[rollcall] [kubernetes] watch stream went silent; restarting it');
      this.abortStream?.();
      this.abortStream = undefined;
      void this.open();
    }, this.options.silenceTimeoutMs);
  }

  private onLine(event: WatchEventLine): void {
    if (this.closed) return;
    if (event.type === 'ERROR') {
      const status = event.object as KubeStatus | undefined;
      this.abortStream?.();
      this.end(statusError(status?.code ?? 500, status, this.options.context));
      return;
    }
    const object = event.object as T | undefined;
    const rv = object?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (event.type === 'BOOKMARK') {
      if (rv) this.handlers.bookmark(rv);
      return;
    }
    if ((event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') && object) this.handlers.object(event.type, object);
  }

  private end(error: RegistryError): void {
    if (this.closed) return;
    this.closed = true;
    this.silenceTimer?.cancel();
    this.handlers.ended(error);
  }
}
