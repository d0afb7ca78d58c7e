import { REAL_NODE_INSTANCE, createGlobalSetup } from './global-setup-factory.js';

/**
 * Vitest global setup of the real-node suites: the Kubernetes control plane with a real
 * node, on the instance they share (REAL_NODE_INSTANCE), left running afterwards.
 */
export default createGlobalSetup(['kubernetes'], { privateInstance: REAL_NODE_INSTANCE });
