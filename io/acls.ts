/**
 * Reading `--acls` (the master's and the agent's flag of that name): JSON text, or a file path
 * (`file://` allowed, as Mesos), parsed by shared/acls.ts. ACLs are not secret: a file of any
 * mode is read. An error names the flag and what is wrong.
 */

import { readFileSync } from 'node:fs';
import { parseAcls, type Acls } from '../shared/acls.js';

/** Reads and parses an `--acls` value; `flag` names it in errors. */
export function readAcls(value: string, flag = '--acls'): { ok: true; acls: Acls } | { ok: false; error: string } {
  const text = aclsText(value, flag);
  if (!text.ok) return text;
  const parsed = parseAcls(text.text);
  if (!parsed.ok) return { ok: false, error: `${flag}: ${parsed.error}` };
  return { ok: true, acls: parsed.value };
}

/** The JSON itself when the value starts with `{`, else the file's text. */
function aclsText(value: string, flag: string): { ok: true; text: string } | { ok: false; error: string } {
  const v = value.trim();
  if (v.startsWith('{')) return { ok: true, text: v };
  const path = v.startsWith('file://') ? v.slice('file://'.length) : v;
  try {
    return { ok: true, text: readFileSync(path, 'utf8') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { ok: false, error: `${flag}: ${path} is neither JSON nor a readable file (${code === 'ENOENT' ? 'no such file' : (code ?? String(e))})` };
  }
}
