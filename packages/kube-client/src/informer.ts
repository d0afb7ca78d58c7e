import { hasCode, type Logger, type RegistryError, type Timer } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import type { ApiClient } from './client.js';
import type { RequestContext } from './errors.js';
import { ResourceWatch, type WatchedObject } from './watch.js';

export interface ResourceInformerOptions {
  client: ApiClient;
  logger: Logger;
  /** Collection path, e.g. `/api/v1/namespaces/prod/pods`. */
  path: string;
  labelSelector: string;
  /** For messages: `pods`, `leases.coordination.k8s.io`. */
  resource: string;
  namespace: string;
  /** Restart a stream silent this long. Milliseconds. */
  silenceTimeoutMs: number;
  /** Server-side lifetime of one watch request. Seconds. */
  timeoutSeconds: number;
  /** First wait before opening the watch again after the API server could not be reached; doubles (less up to 20 % jitter) up to 30 s, on the client's clock. Milliseconds. Default 500. */
  retryMs?: number;
}

export interface ResourceInformerHandlers<T extends WatchedObject> {
  /** An object appeared or changed; `previous` is the state seen before, if any. After a relist, only objects whose resourceVersion moved. */
  upsert(object: T, previous: T | undefined): void;
  /** An object is gone: its last state (the DELETED event's, or the cache's when a relist found it missing). */
  delete(object: T): void;
  /** The watch broke and is being re-opened; nothing is lost, this is for logs and metrics. */
  interrupted?(error: RegistryError): void;
}

interface ObjectList<T> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

/**
 * A cache of every object of one collection matching a label selector, kept by
 * one {@link ResourceWatch}: list, watch from the list's resourceVersion, resume
 * after a dropped or silent stream, and on 410 Gone relist and report exactly the
 * difference (an object gone meanwhile is one `delete` with its last state). The
 * pod runner follows its pods with it; it makes no request per object.
 */
export class ResourceInformer<T extends WatchedObject> {
  private readonly objects = new Map<string, T>();
  private watch: ResourceWatch<T> | undefined;
  private resourceVersion = '';
  private retryTimer: Timer | undefined;
  private readonly backoff: Backoff;
  private closed = false;
  /** How many times the collection was listed (1 after start). */
  lists = 0;

  constructor(
    private readonly options: ResourceInformerOptions,
    private readonly handlers: ResourceInformerHandlers<T>,
  ) {
    this.backoff = new Backoff({ clock: options.client.clock, initialMs: options.retryMs ?? 500 });
  }

  /** Lists the collection and opens the watch; rejects with the mapped error (PERMISSION_DENIED, UNAVAILABLE) if the first list fails. */
  async start(): Promise<void> {
    await this.relist();
  }

  get(name: string): T | undefined {
    return this.objects.get(name);
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  close(): void {
    this.closed = true;
    this.retryTimer?.cancel();
    this.watch?.close();
  }

  private context(verb: string): RequestContext {
    return { verb, resource: this.options.resource, namespace: this.options.namespace };
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const query = new URLSearchParams({ labelSelector: this.options.labelSelector, limit: '500', ...(continueToken ? { continue: continueToken } : {}) });
      const page = await this.options.client.request<ObjectList<T>>({ method: 'GET', path: `${this.options.path}?${query}`, context: this.context('list') });
      resourceVersion ||= page.metadata.resourceVersion;
      continueToken = page.metadata.continue || undefined;
      items.push(...page.items);
    } while (continueToken);
    if (this.closed) return;
    this.lists += 1;
    const seen = new Set<string>();
    for (const item of items) {
      const name = item.metadata.name;
      seen.add(name);
      const previous = this.objects.get(name);
      if (previous?.metadata.resourceVersion === item.metadata.resourceVersion) continue;
      this.objects.set(name, item);
      this.handlers.upsert(item, previous);
    }
    for (const [name, object] of [...this.objects]) {
      if (seen.has(name)) continue;
      this.objects.delete(name);
      this.handlers.delete(object);
    }
    this.resourceVersion = resourceVersion;
    this.openWatch();
  }

  private openWatch(): void {
    if (this.closed) return;
    this.watch = new ResourceWatch<T>(
      {
        client: this.options.client,
        logger: this.options.logger,
        path: this.options.path,
        labelSelector: this.options.labelSelector,
        context: this.context('watch'),
        fromResourceVersion: this.resourceVersion,
        silenceTimeoutMs: this.options.silenceTimeoutMs,
        timeoutSeconds: this.options.timeoutSeconds,
      },
      {
        object: (type, object) => {
          this.backoff.reset();
          if (object.metadata.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
          const name = object.metadata.name;
          const previous = this.objects.get(name);
          if (type === 'DELETED') {
            this.objects.delete(name);
            this.handlers.delete(object);
          } else {
            this.objects.set(name, object);
            this.handlers.upsert(object, previous);
          }
        },
        bookmark: (rv) => {
          this.resourceVersion = rv;
        },
        ended: (error) => this.recover(error),
      },
    );
  }

  /** 410: relist at once. Anything else: open the watch again from where it was, after a growing pause. */
  private recover(error: RegistryError): void {
    if (this.closed) return;
    this.handlers.interrupted?.(error);
    const relist = hasCode(error, 'REVISION_TOO_OLD');
    this.options.logger.info({ err: error, resourceVersion: this.resourceVersion }, `[rollcall] [kubernetes] ${this.options.resource} watch ended; ${relist ? 'relisting' : 'reopening it'}`);
    this.retryTimer = this.options.client.clock.setTimeout(() => {
      if (relist) this.relist().catch((err: RegistryError) => this.recover(err));
      else this.openWatch();
    }, relist ? 0 : this.backoff.next());
  }
}
