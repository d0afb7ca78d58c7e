/**
 * `@rollcall/kubernetes/api`: the API client, watch, informer and error mapping
 * the registry uses, for other Rollcall packages on the same API server (the pod
 * runner). One client, one watch, one mapping of API answers onto Rollcall's codes.
 */
export { ApiClient, loadKubeConfig, resolveNamespace, userAgent, type ApiRequest, type StreamHandlers } from './client.js';
export { ResourceWatch, type ResourceWatchHandlers, type ResourceWatchOptions, type WatchedObject } from './watch.js';
export { ResourceInformer, type ResourceInformerHandlers, type ResourceInformerOptions } from './informer.js';
export { statusError, transportError, type KubeStatus, type RequestContext } from './errors.js';
export type { ObjectMeta, OwnerReference } from './codec.js';
