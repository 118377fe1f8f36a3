/**
 * An HTTP/1.1 streaming answer read from a raw socket, chunk by chunk, so a test can see the
 * chunked transfer encoding itself (`<hex>\r\n<data>\r\n`): what a client that reads one
 * record per chunk (npm mesos-framework splits each chunk on its newline) depends on. fetch
 * and node:http hide chunk boundaries; this does not. Every wait is bounded; close() destroys
 * the socket.
 */

import { connect, type Socket } from 'node:net';

/** What one HTTP chunk holds, checked as RecordIO: exactly one record, or why not. */
export function oneRecord(chunk: Buffer): { ok: true; record: Buffer } | { ok: false; why: string } {
  const nl = chunk.indexOf(0x0a);
  if (nl <= 0) return { ok: false, why: `no length prefix in ${JSON.stringify(chunk.subarray(0, 40).toString('latin1'))}` };
  const prefix = chunk.subarray(0, nl).toString('ascii');
  if (!/^[0-9]+$/.test(prefix)) return { ok: false, why: `bad length prefix ${JSON.stringify(prefix.slice(0, 20))}` };
  const len = Number(prefix);
  const rest = chunk.length - nl - 1;
  if (rest !== len) return { ok: false, why: `the chunk holds ${rest} bytes after a prefix of ${len}: ${rest > len ? 'more than one record' : 'part of a record'} (${JSON.stringify(chunk.subarray(0, 80).toString('latin1'))})` };
  return { ok: true, record: chunk.subarray(nl + 1) };
}

export interface RawRequest {
  readonly host: string;
  readonly port: number;
  readonly method: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer | string;
}

/** A streaming answer: its status and headers once they came, then every chunk's payload in order. */
export class RawStream {
  readonly #socket: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #head: { status: number; headers: Map<string, string> } | undefined;
  /** Payloads of the chunks read so far (the terminating empty chunk is not listed). */
  readonly chunks: Buffer[] = [];
  #ended = false;
  /** The length of a plain (not chunked) body still to come. */
  #plain: number | undefined;
  #error: Error | undefined;
  readonly #waiters = new Set<() => void>();

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      try {
        this.#parse();
      } catch (e) {
        this.#error = e as Error;
        socket.destroy();
      }
      this.#wake();
    });
    socket.on('close', () => {
      this.#ended = true;
      this.#wake();
    });
    socket.on('error', (e) => {
      this.#error ??= e;
      this.#wake();
    });
  }

  /** Sends the request; resolves once the answer's head is read (within timeoutMs). */
  static async open(r: RawRequest, timeoutMs = 10_000): Promise<RawStream> {
    const socket = connect({ host: r.host, port: r.port });
    const s = new RawStream(socket);
    const body = r.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body, 'utf8');
    const headers = { Host: `${r.host}:${r.port}`, 'Content-Length': String(body.length), ...r.headers };
    const head = `${r.method} ${r.path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
    try {
      await s.#until(() => s.#head !== undefined, timeoutMs, 'the answer head');
    } catch (e) {
      s.close();
      throw e;
    }
    return s;
  }

  get status(): number {
    return this.#head?.status ?? 0;
  }

  /** A header of the answer (lower-case name). */
  header(name: string): string | undefined {
    return this.#head?.headers.get(name.toLowerCase());
  }

  /** Waits until at least `n` chunks have come. */
  async waitChunks(n: number, timeoutMs = 10_000): Promise<Buffer[]> {
    await this.#until(() => this.chunks.length >= n, timeoutMs, `${n} chunks (have ${this.chunks.length})`);
    return this.chunks.slice(0, n);
  }

  /** Waits until a chunk after index `from` satisfies `pred`; returns its index. */
  async waitFor(pred: (chunk: Buffer) => boolean, from = 0, timeoutMs = 10_000, what = 'a chunk'): Promise<number> {
    let found = -1;
    await this.#until(
      () => {
        for (let i = from; i < this.chunks.length; i++) if (pred(this.chunks[i] as Buffer)) return (found = i) >= 0;
        return false;
      },
      timeoutMs,
      what,
    );
    return found;
  }

  close(): void {
    this.#socket.destroy();
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  #until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (done()) return finish();
        if (this.#error !== undefined) return finish(this.#error);
        if (this.#ended) return finish(new Error(`the stream ended before ${what}`));
      };
      const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      const finish = (e?: Error): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        if (e === undefined) resolve();
        else reject(e);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Reads the head, then as many whole chunks as the buffer holds. */
  #parse(): void {
    if (this.#head === undefined) {
      const end = this.#buf.indexOf('\r\n\r\n');
      if (end === -1) return;
      const lines = this.#buf.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number((lines[0] ?? '').split(' ')[1]);
      const headers = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      this.#head = { status, headers };
      this.#buf = this.#buf.subarray(end + 4);
      if (headers.get('transfer-encoding') !== 'chunked') {
        // Not a stream (an error answer): its body as one "chunk", once it is all here.
        const len = Number(headers.get('content-length') ?? '0');
        this.#plain = len;
      }
    }
    if (this.#plain !== undefined) {
      if (this.#buf.length >= this.#plain) {
        this.chunks.push(this.#buf.subarray(0, this.#plain));
        this.#buf = this.#buf.subarray(this.#plain);
        this.#plain = undefined;
        this.#ended = true;
      }
      return;
    }
    for (;;) {
      const eol = this.#buf.indexOf('\r\n');
      if (eol === -1) return;
      const size = Number.parseInt(this.#buf.subarray(0, eol).toString('latin1').split(';')[0] ?? '', 16);
      if (!Number.isFinite(size)) throw new Error(`bad chunk size line ${JSON.stringify(this.#buf.subarray(0, eol).toString('latin1'))}`);
      if (this.#buf.length < eol + 2 + size + 2) return;
      const data = this.#buf.subarray(eol + 2, eol + 2 + size);
      if (this.#buf.subarray(eol + 2 + size, eol + 4 + size).toString('latin1') !== '\r\n') throw new Error('a chunk does not end with CRLF');
      this.#buf = this.#buf.subarray(eol + 4 + size);
      if (size === 0) {
        this.#ended = true;
        return;
      }
      this.chunks.push(Buffer.from(data));
    }
  }
}
