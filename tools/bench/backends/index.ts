import type { BackendName, BenchBackend } from '../target.js';
import { etcdBackend } from './etcd.js';
import { kubernetesBackend } from './kubernetes.js';
import { memoryBackend } from './memory.js';
import { mysqlBackend } from './mysql.js';
import { postgresBackend } from './postgres.js';
import { sqliteBackend } from './sqlite.js';
import { zookeeperBackend } from './zookeeper.js';

/** Every backend the benchmark can run, by name. */
export const BACKENDS: Record<BackendName, BenchBackend> = {
  memory: memoryBackend,
  sqlite: sqliteBackend,
  mysql: mysqlBackend,
  postgres: postgresBackend,
  etcd: etcdBackend,
  zookeeper: zookeeperBackend,
  kubernetes: kubernetesBackend,
};
