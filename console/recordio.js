// RecordIO, as the master's SUBSCRIBE stream and the scheduler's plan stream frame their
// records: "<length in UTF-8 bytes>\n<record>" repeated. Chunks of a fetch body arrive cut
// anywhere (inside the length, inside a multi-byte character), so bytes are kept until a whole
// record is there, and only then decoded. Pure: no I/O, importable from Node for tests.

/** The largest record accepted; a length beyond it means the stream is not RecordIO. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

/** Longest length prefix ("67108864" has 8 digits): more digits without a newline is garbage. */
const MAX_LENGTH_DIGITS = 9;

export class RecordIODecoder {
  /** Bytes received and not yet part of a returned record. */
  #pending = new Uint8Array(0);
  #text = new TextDecoder('utf-8', { fatal: false });

  /**
   * Adds a chunk; returns the records it completed, as text, in order. Throws an Error that
   * says what is wrong when the bytes are not RecordIO (the caller drops the stream).
   */
  push(chunk) {
    const joined = new Uint8Array(this.#pending.length + chunk.length);
    joined.set(this.#pending, 0);
    joined.set(chunk, this.#pending.length);
    const out = [];
    let at = 0;
    for (;;) {
      const nl = joined.indexOf(10, at);
      if (nl === -1) {
        if (joined.length - at > MAX_LENGTH_DIGITS) throw new Error('RecordIO: no newline after the record length');
        break;
      }
      const digits = joined.subarray(at, nl);
      if (digits.length === 0 || digits.length > MAX_LENGTH_DIGITS || !digits.every((b) => b >= 48 && b <= 57)) {
        throw new Error(`RecordIO: bad record length '${this.#text.decode(digits.subarray(0, 16))}'`);
      }
      const length = Number(this.#text.decode(digits));
      if (length > MAX_RECORD_BYTES) throw new Error(`RecordIO: record of ${length} bytes is over the ${MAX_RECORD_BYTES}-byte limit`);
      if (joined.length < nl + 1 + length) break;
      out.push(this.#text.decode(joined.subarray(nl + 1, nl + 1 + length)));
      at = nl + 1 + length;
    }
    this.#pending = joined.slice(at);
    return out;
  }

  /** Bytes held for a record not yet complete. */
  get pendingBytes() {
    return this.#pending.length;
  }
}

/** One record in RecordIO framing (for tests and fakes). */
export function encodeRecord(text) {
  const bytes = new TextEncoder().encode(text);
  const head = new TextEncoder().encode(`${bytes.length}\n`);
  const out = new Uint8Array(head.length + bytes.length);
  out.set(head, 0);
  out.set(bytes, head.length);
  return out;
}
