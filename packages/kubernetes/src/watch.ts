import { RevisionTooOldError, type Logger } from '@rollcall/core';
import type { CorruptEntry, StoredRecord, WatchEvent, WatchListener, WatchSubscription } from '@rollcall/core/spi';
import { type ApiClient, BACKEND, ResourceWatch, type RequestContext } from '@rollcall/kube-client';
import type { KubeObject, ResourceCodec } from './codec.js';

/** What a record watch reads its objects through: the store's client, resources and decoding. */
export interface RecordWatchSource {
  client: ApiClient;
  logger: Logger;
  /** The resources records are stored as, in the order of a revision's positions. */
  codecs: readonly ResourceCodec[];
  path(codec: ResourceCodec): string;
  context(verb: string, codec: ResourceCodec): RequestContext;
  /** Each object seen, or its deletion: the store keeps the latest election and lock objects. */
  saw(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject): void;
  /** The record an object holds; undefined for one that is not a record (skipped). */
  decode(codec: ResourceCodec, object: KubeObject): StoredRecord | CorruptEntry | undefined;
  /** A watch with no event for this long is restarted. Milliseconds. */
  watchSilenceTimeoutMs: number;
  /** The server-side lifetime of one watch request. Seconds. */
  watchTimeoutSeconds: number;
}

/** Which records one watch follows: the selectors sent to the API server and the key prefix checked last. */
export interface RecordWatchScope {
  prefix: string;
  labelSelector: string;
  fieldSelector: string | undefined;
}

/**
 * One watch per resource, from the positions of a store revision (one
 * resourceVersion per resource, comma-joined): every event carries the
 * revision of all of them, and an object outside the prefix is progress only.
 * A revision this store did not write ends the watch with REVISION_TOO_OLD.
 */
export function watchRecords(source: RecordWatchSource, scope: RecordWatchScope, fromRevision: string, listener: WatchListener): WatchSubscription {
  const positions = fromRevision.split(',');
  const watches: ResourceWatch<KubeObject>[] = [];
  let open = true;
  const close = () => {
    open = false;
    watches.forEach((w) => w.close());
  };
  const emit = (event: WatchEvent) => open && listener.event(event);
  if (positions.length !== source.codecs.length || positions.some((p) => !p)) {
    queueMicrotask(() => open && (close(), listener.error(new RevisionTooOldError(`revision ${fromRevision} is not one this store wrote`, { backend: BACKEND }))));
    return { close };
  }
  const revision = () => positions.join(',');
  source.codecs.forEach((codec, index) => {
    watches.push(
      new ResourceWatch<KubeObject>(
        {
          client: source.client,
          logger: source.logger,
          path: source.path(codec),
          labelSelector: scope.labelSelector,
          fieldSelector: scope.fieldSelector,
          context: source.context('watch', codec),
          fromResourceVersion: positions[index]!,
          silenceTimeoutMs: source.watchSilenceTimeoutMs,
          timeoutSeconds: source.watchTimeoutSeconds,
        },
        {
          object: (type, object) => {
            positions[index] = object.metadata.resourceVersion ?? positions[index]!;
            source.saw(type, object);
            const decoded = source.decode(codec, object);
            if (!decoded || !decoded.key.startsWith(scope.prefix)) return emit({ type: 'progress', revision: revision() });
            if (type === 'DELETED') emit({ type: 'delete', key: decoded.key, revision: revision() });
            else if ('error' in decoded) emit({ type: 'corrupt', entry: decoded, revision: revision() });
            else emit({ type: 'put', record: decoded, revision: revision() });
          },
          bookmark: (rv) => {
            positions[index] = rv;
            emit({ type: 'progress', revision: revision() });
          },
          ended: (error) => {
            if (!open) return;
            close();
            listener.error(error);
          },
        },
      ),
    );
  });
  return { close };
}
