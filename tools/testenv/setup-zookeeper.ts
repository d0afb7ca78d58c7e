import { createGlobalSetup } from './global-setup-factory.js';

/** Vitest global setup that brings up ZooKeeper: the standalone server and the 3-node ensemble. */
export default createGlobalSetup(['zookeeper', 'zookeeper-ensemble']);
