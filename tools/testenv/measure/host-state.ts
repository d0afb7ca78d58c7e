import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a test environment must leave as it found it on the machine: the network
 * namespace's links, addresses, routes, rules and packet filters, every kernel setting
 * under /proc/sys, and the mount table. Compared before, during and after an instance.
 */
export interface HostState {
  network: Record<string, string>;
  sysctls: Record<string, string>;
  mounts: string[];
}

/**
 * Settings that are counters or change by themselves (entropy, pids, dentries, open
 * files), not configuration: left out of the comparison.
 */
const VOLATILE_SYSCTLS = [
  /^fs\/(dentry-state|inode-nr|inode-state|file-nr|aio-nr)$/,
  /^fs\/quota\//,
  /^kernel\/random\//,
  /^kernel\/(ns_last_pid|pty\/nr|keys\/(maxkeys|maxbytes)_used)$/,
  /^net\/netfilter\/nf_conntrack_count$/,
  /^vm\/(stat_refresh|drop_caches|compact_memory)$/,
  /^kernel\/sched_domain\//,
  /^fs\/binfmt_misc\//,
];

function command(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (error) {
    return `(${cmd} ${args.join(' ')} failed: ${(error as Error).message.split('\n')[0]})`;
  }
}

function sysctls(): Record<string, string> {
  const values: Record<string, string> = {};
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const key = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (VOLATILE_SYSCTLS.some((re) => re.test(key))) continue;
      if (entry.isDirectory()) walk(path, key);
      else {
        try {
          if ((statSync(path).mode & 0o444) === 0) continue; // write-only
          values[key] = readFileSync(path, 'utf8').trim();
        } catch {
          // not readable (EPERM, EINVAL for some): not a setting we can compare
        }
      }
    }
  };
  walk('/proc/sys', '');
  return values;
}

/** The machine's state as this process sees it (its own network and mount namespaces: the machine's). */
export function captureHostState(): HostState {
  return {
    network: {
      links: command('ip', ['-o', 'link', 'show']).replace(/\s+link\/\S+ [0-9a-f:]+ brd [0-9a-f:]+/g, ''),
      addresses: command('ip', ['-o', 'addr', 'show']),
      routes: command('ip', ['route', 'show', 'table', 'all']),
      rules: command('ip', ['rule', 'show']),
      iptables: command('iptables-save', []).replace(/^#.*$/gm, '').replace(/\[\d+:\d+\]/g, ''),
      nftables: command('nft', ['list', 'ruleset']),
    },
    sysctls: sysctls(),
    mounts: readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      // mount point, options, type and source; not the ids, which a remount renumbers
      .map((line) => line.split(' ').slice(4).join(' '))
      .sort(),
  };
}

/** Every difference between two states, one line each (empty when equal). */
export function diffHostState(before: HostState, after: HostState): string[] {
  const diffs: string[] = [];
  for (const key of Object.keys({ ...before.network, ...after.network })) {
    if (before.network[key] !== after.network[key]) diffs.push(`network ${key} changed:\n--- before\n${before.network[key]}\n--- after\n${after.network[key]}`);
  }
  for (const key of Object.keys({ ...before.sysctls, ...after.sysctls })) {
    if (before.sysctls[key] !== after.sysctls[key]) diffs.push(`sysctl ${key}: ${before.sysctls[key]} -> ${after.sysctls[key]}`);
  }
  const beforeMounts = new Set(before.mounts);
  const afterMounts = new Set(after.mounts);
  for (const m of after.mounts) if (!beforeMounts.has(m)) diffs.push(`mount added: ${m}`);
  for (const m of before.mounts) if (!afterMounts.has(m)) diffs.push(`mount removed: ${m}`);
  return diffs;
}
