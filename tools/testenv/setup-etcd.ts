import { createGlobalSetup } from './global-setup-factory.js';

/** Vitest global setup that brings up etcd: the plain one and the one with authentication. */
export default createGlobalSetup(['etcd', 'etcd-auth']);
