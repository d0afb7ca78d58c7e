import { createHash } from 'node:crypto';
import zookeeper from 'node-zookeeper-client';
import type { ACL } from 'node-zookeeper-client';
import type { ZookeeperOptions } from './options.js';

const { Permission } = zookeeper;

/** The digest id ZooKeeper derives from a user name and password: `user:base64(sha1(user:password))`. */
function digestId(username: string, password: string): string {
  return `${username}:${createHash('sha1').update(`${username}:${password}`, 'utf8').digest('base64')}`;
}

/** ACLs of records and the cluster znode: this digest identity only (plus world READ if asked); open without auth. */
export function recordAcls(options: { auth?: ZookeeperOptions['auth']; worldReadable?: boolean }): ACL[] {
  if (!options.auth) return [new zookeeper.ACL(Permission.ALL, new zookeeper.Id('world', 'anyone'))];
  const acls = [new zookeeper.ACL(Permission.ALL, new zookeeper.Id('digest', digestId(options.auth.username, options.auth.password)))];
  if (options.worldReadable) acls.push(new zookeeper.ACL(Permission.READ, new zookeeper.Id('world', 'anyone')));
  return acls;
}

/** ACLs of the root's ancestors: anyone may read them and add a cluster; only this identity may change or delete them. */
export function ancestorAcls(options: Pick<ZookeeperOptions, 'auth'>): ACL[] {
  if (!options.auth) return [new zookeeper.ACL(Permission.ALL, new zookeeper.Id('world', 'anyone'))];
  return [
    new zookeeper.ACL(Permission.ALL, new zookeeper.Id('digest', digestId(options.auth.username, options.auth.password))),
    new zookeeper.ACL(Permission.READ | Permission.CREATE, new zookeeper.Id('world', 'anyone')),
  ];
}
