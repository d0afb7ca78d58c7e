import { readFileSync } from 'node:fs';
import { ConfigurationError, type Logger } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';

/** TLS to a database server: the `tls.*` keys of every networked SQL backend. */
export interface SqlTlsOptions {
  /** Connect over TLS. Default false. */
  readonly enabled: boolean;
  /** PEM file of the CA that signed the server's certificate. Default: the system's CAs. */
  readonly caFile?: string;
  /** PEM file of a client certificate, for servers that require one. */
  readonly certFile?: string;
  /** PEM file of the client certificate's key. */
  readonly keyFile?: string;
  /** Refuse a server whose certificate does not verify. Default true; false only for tests. */
  readonly rejectUnauthorized: boolean;
}

const nonEmpty = (v: string) => (v === '' ? 'must not be empty' : undefined);

/** The option specs of {@link SqlTlsOptions}, for a backend's schema. */
export const sqlTlsOptions: OptionSchema = {
  'tls.enabled': { type: 'boolean', default: false, doc: 'Connect over TLS.' },
  'tls.caFile': { type: 'string', doc: "PEM file of the CA of the server's certificate.", check: nonEmpty },
  'tls.certFile': { type: 'string', doc: 'PEM file of a client certificate.', check: nonEmpty },
  'tls.keyFile': { type: 'string', doc: "PEM file of the client certificate's key.", check: nonEmpty },
  'tls.rejectUnauthorized': { type: 'boolean', default: true, doc: 'Refuse a server certificate that does not verify.' },
};

/** Cross-key rules: TLS files only with TLS on, a certificate and its key together. */
export function tlsOptionsProblem(tls: SqlTlsOptions): { key: string; rule: string } | undefined {
  for (const file of ['caFile', 'certFile', 'keyFile'] as const) {
    if (tls[file] !== undefined && !tls.enabled) return { key: `tls.${file}`, rule: 'is set but tls.enabled is false' };
  }
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) return { key: tls.certFile === undefined ? 'tls.certFile' : 'tls.keyFile', rule: 'tls.certFile and tls.keyFile go together' };
  return undefined;
}

/** What a Node TLS client takes: the PEM files read, before anything is contacted. */
export interface TlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized: boolean;
}

/**
 * Reads the PEM files of enabled TLS, or undefined when TLS is off. An
 * unreadable file is INVALID_CONFIG naming `registry.<backend>.tls.<key>`.
 */
export function readTlsFiles(backend: string, tls: SqlTlsOptions): TlsFiles | undefined {
  if (!tls.enabled) return undefined;
  const read = (key: string, file: string | undefined): string | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigurationError(`registry.${backend}.${key}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
        backend,
        key: `registry.${backend}.${key}`,
        cause: err,
      });
    }
  };
  return { ca: read('tls.caFile', tls.caFile), cert: read('tls.certFile', tls.certFile), key: read('tls.keyFile', tls.keyFile), rejectUnauthorized: tls.rejectUnauthorized };
}

/**
 * Says, once per connect, that TLS is on without verifying the server's
 * certificate (`tls.rejectUnauthorized: false`): the traffic is encrypted, but
 * anyone on the path can pose as the server and read the password.
 */
export function warnUnverifiedTls(logger: Logger, backend: string, tls: SqlTlsOptions): void {
  if (!tls.enabled || tls.rejectUnauthorized) return;
  logger.warn(
    { backend, key: `registry.${backend}.tls.rejectUnauthorized` },
    `[rollcall] [${backend}] TLS without verifying the server's certificate (registry.${backend}.tls.rejectUnauthorized=false): anyone on the path can pose as the server; give registry.${backend}.tls.caFile instead`,
  );
}
