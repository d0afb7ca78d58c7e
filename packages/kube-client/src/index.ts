/**
 * `@rollcall/kube-client`: the Kubernetes API client the registry's backend and
 * the pod runner share. One client, one watch, one informer, one mapping of API
 * answers onto Rollcall's codes.
 */
export { ApiClient, loadKubeConfig, resolveNamespace, userAgent, type ApiRequest, type KubeConfigSource, type StreamHandlers } from './client.js';
export { ResourceWatch, type ResourceWatchHandlers, type ResourceWatchOptions, type WatchedObject } from './watch.js';
export { ResourceInformer, type ResourceInformerHandlers, type ResourceInformerOptions } from './informer.js';
export { BACKEND, statusError, transportError, type KubeStatus, type RequestContext } from './errors.js';
export type { ObjectMeta, OwnerReference } from './object-meta.js';
export { admissionPolicyBinding, celString, serviceAccountCondition, validatingAdmissionPolicy, type AdmissionOperation, type AdmissionBindingOptions, type AdmissionParamRef, type AdmissionPolicyOptions, type AdmissionResources, type AdmissionRule, type AdmissionVariable, type LabelSelector } from './admission-policy.js';
export { manifestYaml } from './manifest-yaml.js';
