import { backendSetup } from './global-setup-factory.js';
import { etcdBackend } from '../servers/etcd.js';

/** Vitest global setup that brings up both etcd servers. */
export default backendSetup(etcdBackend);
