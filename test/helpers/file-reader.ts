/**
 * Fake PEM material and a file reader over a table of files, for the unit tests of what reads
 * etcd's and TLS files (io/etcd-access.ts, master/etcd-client.ts): no disk, every refusal by table.
 */

import type { FileReader } from '../../io/etcd-access.js';

export const CA = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';
export const CERT = '-----BEGIN CERTIFICATE-----\ncert\n-----END CERTIFICATE-----\n';
export const KEY = '-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n';

/** Files by path; a path in `open` has a mode others can read (refused unless allowOpenMode). */
export function reader(files: Record<string, string>, open: readonly string[] = []): FileReader {
  return (path, what, allowOpenMode) => {
    const text = files[path];
    if (text === undefined) return { ok: false, error: `${what} ${path} cannot be read: no such file` };
    if (open.includes(path) && !allowOpenMode) return { ok: false, error: `${what} ${path} is readable by others (mode 0644); run chmod 600 on it` };
    return { ok: true, text };
  };
}
