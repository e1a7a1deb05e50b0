// The helper's answers as lines, in time linear in their size. A dump of a namespace may be many
// megabytes and arrive in thousands of chunks: appending each chunk to one string and searching it
// all again for the newline is quadratic, and it runs on the agent's event loop. Here each chunk is
// searched once and kept as it came; a line is joined and decoded once, when its newline arrives. Bytes, not text, until then: a newline byte never occurs inside a multi-byte
// UTF-8 character, so a character split across chunks is decoded whole.

const NEWLINE = 0x0a;

export class LineReader {
  readonly #onLine: (line: string) => void;
  /** The start of the line not yet complete, in the pieces it came in. */
  #pending: Buffer[] = [];

  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }

  push(chunk: Buffer): void {
    let from = 0;
    let nl = chunk.indexOf(NEWLINE, from);
    while (nl >= 0) {
      const end = chunk.subarray(from, nl);
      const line = this.#pending.length === 0 ? end : Buffer.concat([...this.#pending, end]);
      this.#pending = [];
      this.#onLine(line.toString('utf8'));
      from = nl + 1;
      nl = chunk.indexOf(NEWLINE, from);
    }
    if (from < chunk.length) this.#pending.push(chunk.subarray(from));
  }
}
