import { backendSetup } from './global-setup-factory.js';
import { zookeeperBackend } from '../servers/zookeeper.js';

/** Vitest global setup that brings up the standalone server and the ensemble. */
export default backendSetup(zookeeperBackend);
