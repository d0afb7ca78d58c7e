export { kubernetesStore, registryPlugin, type KubernetesConnectOptions } from './plugin.js';
export { KubernetesStore } from './store.js';
export type { KubernetesStoreOptions } from './options.js';
export { objectName } from './object-names.js';
export { CLUSTER_LABEL, KIND_LABEL, ROLE_LABEL, KEY_ANNOTATION, PAYLOAD_ANNOTATION, LEADER_ANNOTATION } from './codec.js';
