/** What a connection string may give: the keys it stands for. */
export interface UrlParts {
  host?: string;
  port?: number;
  user?: string;
  password?: string;
  database?: string;
}

/** The keys a `url` stands for, in the order errors name them. */
export const URL_KEYS = ['host', 'port', 'user', 'password', 'database'] as const;

/**
 * Reads `postgres://user:password@host:port/database` (or `postgresql://`);
 * every part optional, percent-decoding applied. Returns the parts, or the
 * broken rule. The text of the URL never appears in the rule: it may hold the
 * password. Query parameters (`?sslmode=...`) are refused rather than
 * ignored: TLS and the schema have keys of their own.
 */
export function parsePostgresUrl(text: string): UrlParts | string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL: expected postgres://user:password@host:port/database';
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') return 'must start with postgres:// or postgresql://';
  if (url.search !== '') return 'query parameters are not read: give TLS with the tls.* keys and the schema with the schema key';
  if (url.hash !== '') return 'must not have a #fragment';
  const parts: UrlParts = {};
  try {
    // Brackets of an IPv6 literal are URL syntax, not part of the address.
    if (url.hostname !== '') parts.host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (url.port !== '') parts.port = Number(url.port);
    if (url.username !== '') parts.user = decodeURIComponent(url.username);
    if (url.password !== '') parts.password = decodeURIComponent(url.password);
    const path = url.pathname.replace(/^\//, '');
    if (path.includes('/')) return 'the path must be one database name';
    if (path !== '') parts.database = decodeURIComponent(path);
  } catch {
    return 'has a malformed percent-escape';
  }
  return parts;
}
