/**
 * Users by name or uid, for running a process as another user (the master's maintenance hooks,
 * `--hook_user`). `parsePasswd` is a pure parser of passwd(5) lines; `lookupUser` reads
 * /etc/passwd and, for users it does not list (LDAP, systemd's dynamic users), asks `getent`,
 * whose answer has the same format.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** One passwd line's fields that matter here. */
export interface PasswdEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

const ID = /^\d{1,10}$/;

/**
 * The entries of passwd(5) text: `name:password:uid:gid:gecos:home:shell`. Comments, blank lines,
 * NIS `+`/`-` lines and lines without seven fields or with ids that are not numbers are skipped. Pure.
 */
export function parsePasswd(text: string): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('+') || line.startsWith('-')) continue;
    const f = line.split(':');
    if (f.length !== 7) continue;
    const [name = '', , uid = '', gid = '', , home = ''] = f;
    if (name === '' || !ID.test(uid) || !ID.test(gid)) continue;
    const u = Number(uid);
    const g = Number(gid);
    if (u > 0xffffffff || g > 0xffffffff) continue;
    out.push({ name, uid: u, gid: g, home });
  }
  return out;
}

/** The entry for a name, or for a uid (a number, or a name made of digits when no user has that name). Pure. */
export function findUser(entries: readonly PasswdEntry[], who: string | number): PasswdEntry | undefined {
  if (typeof who === 'number') return entries.find((e) => e.uid === who);
  return entries.find((e) => e.name === who) ?? (ID.test(who) ? entries.find((e) => e.uid === Number(who)) : undefined);
}

/** Looks a user up in /etc/passwd, then with `getent passwd` (bounded: 5 s); undefined when neither knows it. */
export function lookupUser(who: string | number): PasswdEntry | undefined {
  let local: PasswdEntry | undefined;
  try {
    local = findUser(parsePasswd(readFileSync('/etc/passwd', 'utf8')), who);
  } catch {
    local = undefined;
  }
  if (local !== undefined) return local;
  // getent takes a name or a uid; a name is passed as an argument, never through a shell.
  if (typeof who === 'string' && !/^[A-Za-z0-9._][A-Za-z0-9._-]*\$?$/.test(who)) return undefined;
  try {
    const text = execFileSync('getent', ['passwd', String(who)], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
    return findUser(parsePasswd(text), who);
  } catch {
    return undefined;
  }
}
