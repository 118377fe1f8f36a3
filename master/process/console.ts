/**
 * The web console's files (console/ at the top of the repo): plain HTML, CSS and ES modules the
 * master serves at `/` and `/console/<file>`. They hold no data, so they need no credentials;
 * every figure the page shows comes from the operator API it calls with the operator's own
 * credentials, filtered by the view ACLs like any other client's.
 *
 * A fixed allow-list, read once when the master starts: no path from a request ever reaches the
 * file system, and a console upgraded on disk is served after a restart, like the code. The core
 * (`consoleFile`, `etagOf`) is pure; `ConsoleFiles` holds the bytes and answers.
 */

import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sendText } from '../../shared/http.js';

/** Every file the console has, with its Content-Type. Nothing else under /console/ is served. */
export const CONSOLE_FILES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'api.js': 'text/javascript; charset=utf-8',
  'model.js': 'text/javascript; charset=utf-8',
  'recordio.js': 'text/javascript; charset=utf-8',
  'views.js': 'text/javascript; charset=utf-8',
  'dom.js': 'text/javascript; charset=utf-8',
  'actions.js': 'text/javascript; charset=utf-8',
  'sandbox.html': 'text/html; charset=utf-8',
  'sandbox.js': 'text/javascript; charset=utf-8',
};

/**
 * The page may load only its own files; it may call any http(s) origin because a service
 * scheduler's plans live at its own address (FrameworkInfo.webui_url). No inline script or
 * style, no frames, no plugins.
 */
export const CONSOLE_CSP = "default-src 'self'; connect-src 'self' http: https:; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The sandbox reader (sandbox.html, a frame of the console's task page) loads an agent's
 * `/files/read` as JSONP, i.e. as a script from the agent's address, so its policy allows
 * scripts from http(s). `sandbox allow-scripts` gives it an opaque origin however it is opened:
 * what runs there cannot reach the console's page, its credentials or its storage, and only the
 * console's own pages may frame it.
 */
export const SANDBOX_READER_CSP = "sandbox allow-scripts; default-src 'none'; script-src http: https:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'";

/** Whether a request path is the console's (`/`, `/console`, `/console/...`). */
export function isConsolePath(path: string): boolean {
  return path === '/' || path === '/console' || path.startsWith('/console/');
}

/** The allow-listed file a console path names, or undefined (404). Pure. */
export function consoleFile(path: string): string | undefined {
  if (path === '/' || path === '/console' || path === '/console/') return 'index.html';
  const name = path.slice('/console/'.length);
  return Object.hasOwn(CONSOLE_FILES, name) ? name : undefined;
}

/** A strong ETag of some bytes. Pure. */
export function etagOf(bytes: Buffer): string {
  return `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
}

/**
 * Where console/ is: next to dist/ when built (dist/master/process/console.js -> ../../../console), or
 * next to master/ when run from source (master/process/console.ts -> ../../console). Undefined when neither has
 * an index.html.
 */
export function findConsoleDir(moduleUrl: string = import.meta.url): string | undefined {
  const here = dirname(fileURLToPath(moduleUrl));
  for (const up of ['../../..', '../..']) {
    const dir = resolve(here, up, 'console');
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return undefined;
}

interface Served {
  readonly bytes: Buffer;
  readonly type: string;
  readonly etag: string;
}

/** The console's files in memory, and the answers to their requests. */
export class ConsoleFiles {
  readonly #files = new Map<string, Served>();
  /** Why nothing is served (files missing), said in the 404. */
  readonly #missing: string | undefined;

  private constructor(files: Map<string, Served>, missing: string | undefined) {
    this.#files = files;
    this.#missing = missing;
  }

  /** Reads every allow-listed file of `dir` (findConsoleDir's; undefined: not installed). Never throws. */
  static load(dir: string | undefined): ConsoleFiles {
    const files = new Map<string, Served>();
    if (dir === undefined) return new ConsoleFiles(files, 'the web console is not installed (no console/ directory next to dist/)');
    const unreadable: string[] = [];
    for (const [name, type] of Object.entries(CONSOLE_FILES)) {
      try {
        const bytes = readFileSync(join(dir, name));
        files.set(name, { bytes, type, etag: etagOf(bytes) });
      } catch {
        unreadable.push(name);
      }
    }
    return new ConsoleFiles(files, unreadable.length === 0 ? undefined : `the web console is incomplete: cannot read ${unreadable.join(', ')} in ${dir}`);
  }

  /** Total bytes served (the bundle size). */
  get size(): number {
    let n = 0;
    for (const f of this.#files.values()) n += f.bytes.length;
    return n;
  }

  /** Answers a GET or HEAD of a console path: 200, 304 on a matching If-None-Match, 404, or 405. */
  serve(path: string, req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'GET', 'HEAD' }, but received '${req.method ?? ''}'.`, { Allow: 'GET, HEAD' });
      return;
    }
    const name = consoleFile(path);
    const file = name === undefined ? undefined : this.#files.get(name);
    if (file === undefined) {
      sendText(res, 404, name !== undefined && this.#missing !== undefined ? `404 Not Found: ${this.#missing}.` : '404 Not Found.');
      return;
    }
    const headers: Record<string, string | number> = {
      'Content-Type': file.type,
      ETag: file.etag,
      // Revalidated on every load (a 304 is cheap): a master upgraded with a new console serves it at once.
      'Cache-Control': 'no-cache',
      'Content-Security-Policy': name === 'sandbox.html' ? SANDBOX_READER_CSP : CONSOLE_CSP,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': name === 'sandbox.html' ? 'SAMEORIGIN' : 'DENY',
      'Referrer-Policy': 'no-referrer',
    };
    const inm = req.headers['if-none-match'];
    if (inm !== undefined && inm.split(',').some((t) => t.trim() === file.etag)) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Length': file.bytes.length });
    res.end(req.method === 'HEAD' ? undefined : file.bytes);
  }
}
