/**
 * RecordIO, the framing of Mesos' streaming responses (operator SUBSCRIBE, scheduler
 * SUBSCRIBE): each record is `<decimal length>\n<bytes>`, the length counting bytes (UTF-8
 * bytes of a JSON record, not JavaScript characters; or a protobuf message's), and no trailing
 * newline.
 */

/** Frames one record of text. */
export function encodeRecord(text: string): Buffer {
  return frameRecord(Buffer.from(text, 'utf8'));
}

/** Frames one record of bytes (a protobuf message). */
export function frameRecord(body: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${body.length}\n`, 'ascii'), body]);
}

/**
 * Incremental reader: feed chunks as they arrive, get the complete records.
 * Throws on a malformed length prefix (the stream is then unusable).
 */
export class RecordReader {
  #buf: Buffer = Buffer.alloc(0);
  readonly #maxRecordBytes: number;

  constructor(maxRecordBytes = 64 * 1024 * 1024) {
    this.#maxRecordBytes = maxRecordBytes;
  }

  /** The complete records so far, as UTF-8 text (JSON records). */
  push(chunk: Buffer | string): string[] {
    return this.pushBytes(chunk).map((r) => r.toString('utf8'));
  }

  /** The complete records so far, as bytes (protobuf records). */
  pushBytes(chunk: Buffer | string): Buffer[] {
    this.#buf = Buffer.concat([this.#buf, typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk]);
    const out: Buffer[] = [];
    for (;;) {
      const nl = this.#buf.indexOf(0x0a);
      if (nl === -1) {
        if (this.#buf.length > 20) throw new Error('RecordIO: length prefix is too long');
        return out;
      }
      const prefix = this.#buf.subarray(0, nl).toString('ascii');
      if (!/^[0-9]+$/.test(prefix)) throw new Error(`RecordIO: bad length prefix '${prefix.slice(0, 20)}'`);
      const len = Number(prefix);
      if (len > this.#maxRecordBytes) throw new Error(`RecordIO: record of ${len} bytes is over the limit`);
      if (this.#buf.length < nl + 1 + len) return out;
      out.push(this.#buf.subarray(nl + 1, nl + 1 + len));
      this.#buf = this.#buf.subarray(nl + 1 + len);
    }
  }
}
