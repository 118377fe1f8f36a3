/**
 * Lines out of a stream of text chunks (a child's stdout): each push returns the lines it
 * completed, without their '\n'; an unfinished last line waits for the next chunk.
 */
export class LineBuffer {
  #rest = '';

  push(chunk: string): string[] {
    const parts = (this.#rest + chunk).split('\n');
    this.#rest = parts.pop() ?? '';
    return parts;
  }

  /** Drops an unfinished line (its writer is gone). */
  reset(): void {
    this.#rest = '';
  }
}
