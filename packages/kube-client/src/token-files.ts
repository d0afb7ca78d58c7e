import { readFileSync, statSync } from 'node:fs';
import { type KubeConfig, loadYaml } from '@kubernetes/client-node';

/**
 * The kubeconfig users that name a `token-file`, by user name. client-node
 * reads such a file once, when the kubeconfig is loaded, and keeps the token:
 * a rotated one (a projected token, a refreshed credential) would never be
 * used. The client reads the file again on every request instead.
 */
const tokenFiles = new WeakMap<KubeConfig, Map<string, string>>();

/** Notes the `token-file` users of the kubeconfig files `kc` was loaded from. A file that does not parse is skipped: loading it reported that already. */
export function rememberTokenFiles(kc: KubeConfig, files: readonly string[]): void {
  const byUser = new Map<string, string>();
  for (const file of files) {
    let parsed: unknown;
    try {
      parsed = loadYaml(readFileSync(file, 'utf8'));
    } catch {
      continue;
    }
    const users = (parsed as { users?: unknown } | undefined)?.users;
    if (!Array.isArray(users)) continue;
    for (const entry of users as { name?: unknown; user?: { token?: unknown; 'token-file'?: unknown } }[]) {
      // kubectl's precedence: an inline token wins over a token file; the first file to name a user wins.
      if (typeof entry?.name !== 'string' || byUser.has(entry.name) || entry.user?.token) continue;
      if (typeof entry.user?.['token-file'] === 'string') byUser.set(entry.name, entry.user['token-file']);
    }
  }
  if (byUser.size > 0) tokenFiles.set(kc, byUser);
}

/** The last read of each token file, kept while the file (as `stat` follows a projected volume's symlinks) is unchanged. */
const lastRead = new Map<string, { stamp: string; token: string }>();

/**
 * The current user's token as its `token-file` holds it now; undefined when the
 * user has none (or it cannot be read: client-node's own token then stands).
 * Called per request: a `stat` per call, a read only when the file changed
 * (inode, size or modification time — a kubelet's projected-token rotation
 * swaps the file, so all three move).
 */
export function freshToken(kc: KubeConfig): string | undefined {
  const file = tokenFiles.get(kc)?.get(kc.getCurrentUser()?.name ?? '');
  if (file === undefined) return undefined;
  try {
    const st = statSync(file, { bigint: true });
    const stamp = `${st.ino}:${st.size}:${st.mtimeNs}`;
    const cached = lastRead.get(file);
    if (cached?.stamp === stamp) return cached.token;
    const token = readFileSync(file, 'utf8').trim();
    lastRead.set(file, { stamp, token });
    return token;
  } catch {
    lastRead.delete(file);
    return undefined;
  }
}
