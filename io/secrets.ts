/**
 * Reading files that hold secrets (credentials, keys, passwords). Every daemon and the CLI read
 * them through here, so they all refuse the same things with the same words: a file that other
 * users can read or write (`chmod 600`, or `640` for a service group, fixes it), a file that is
 * not a regular file, and one too large to be a credential.
 */

import { readFileSync, statSync } from 'node:fs';
import { parseCredentials, type Credential } from '../shared/credentials.js';

/** A secret file larger than this is a mistake (a wrong path), not a credential. */
export const MAX_SECRET_FILE_BYTES = 16 * 1024 * 1024;

export type SecretRead = { ok: true; text: string } | { ok: false; error: string };

/**
 * The mode bits that make a secret file unsafe: read, write or execute for others, and write for
 * the group. Group read stays allowed so a `drydock` group can share a file (systemd's
 * `LoadCredential=` copies are 0400 anyway).
 */
export const UNSAFE_SECRET_MODE = 0o027;

/** Why a file's mode is unsafe for a secret, or undefined when it is fine. Pure. */
export function unsafeModeReason(mode: number): string | undefined {
  const bad = mode & UNSAFE_SECRET_MODE;
  if (bad === 0) return undefined;
  const what = [(mode & 0o004) !== 0 ? 'readable by others' : '', (mode & 0o002) !== 0 ? 'writable by others' : '', (mode & 0o020) !== 0 ? 'writable by its group' : '', (mode & 0o001) !== 0 ? 'executable by others' : '']
    .filter((s) => s !== '')
    .join(', ');
  return `is ${what} (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); run chmod 600 on it`;
}

/**
 * Reads a secret file: `what` names it in errors (`--credentials`). Refuses an unsafe mode unless
 * `allowOpenMode` (set only for public material such as a CA certificate).
 */
export function readSecretFile(path: string, what: string, allowOpenMode = false): SecretRead {
  let size: number;
  let mode: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) return { ok: false, error: `${what} ${path} is not a regular file` };
    size = st.size;
    mode = st.mode;
  } catch (e) {
    return { ok: false, error: `${what} ${path} cannot be read: ${reason(e)}` };
  }
  if (size > MAX_SECRET_FILE_BYTES) return { ok: false, error: `${what} ${path} is ${size} bytes, more than ${MAX_SECRET_FILE_BYTES}: is it the right file?` };
  if (!allowOpenMode) {
    const unsafe = unsafeModeReason(mode);
    if (unsafe !== undefined) return { ok: false, error: `${what} ${path} ${unsafe}` };
  }
  try {
    return { ok: true, text: readFileSync(path, 'utf8') };
  } catch (e) {
    return { ok: false, error: `${what} ${path} cannot be read: ${reason(e)}` };
  }
}

function reason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  return code ?? (e instanceof Error ? e.message : String(e));
}

/**
 * Reads a `--credentials` file (master or scheduler): the secret-file checks, then the formats of
 * shared/credentials.ts. An error names the flag and the file, never a secret.
 */
export function readCredentialsFile(path: string, flag = '--credentials'): { ok: true; credentials: Credential[] } | { ok: false; error: string } {
  const read = readSecretFile(path, flag);
  if (!read.ok) return read;
  const parsed = parseCredentials(read.text);
  if (!parsed.ok) return { ok: false, error: `${flag} ${path}: ${parsed.error}` };
  return { ok: true, credentials: parsed.value };
}

/**
 * A PEM certificate file (public: any mode) read through `read`; the error names the flag and
 * the file. The TLS and etcd flags of every daemon read theirs this way.
 */
export function readPemCertificate(path: string, flag: string, read: (path: string, what: string, allowOpenMode: boolean) => SecretRead = readSecretFile): SecretRead {
  const r = read(path, flag, true);
  if (!r.ok) return r;
  if (!r.text.includes('-----BEGIN CERTIFICATE-----')) return { ok: false, error: `${flag} ${path} holds no PEM certificate` };
  return r;
}
