/**
 * Reading processed JSON files without holding them in memory.
 *
 * The engine's layout is fixed: `[\n`, one JSON object per line joined by
 * `,\n`, then `\n]\n` (an empty file is `[\n]\n`). A row is therefore a line
 * that starts with `{`; its trailing `,` is not part of it. `rowIndex` is the
 * row's 0-based position in the file.
 */

const NL = 10;
const COMMA = 44;
const CR = 13;
const OPEN_BRACE = 123;

/**
 * Called for each row: the row's bytes are `buf[start, end)` (valid only
 * during the call), `offset` is where they start in the file.
 */
export type RowVisitor = (buf: Uint8Array, start: number, end: number, rowIndex: number, offset: number) => void;

/**
 * Splits a byte stream into row lines. Push chunks in order, then `end()`.
 * Rows are visited in place inside each chunk; only a row cut by a chunk
 * boundary is copied.
 */
export class RowSplitter {
  rows = 0;
  private fileOffset = 0;
  private carry: Uint8Array[] = [];
  private carryBytes = 0;

  constructor(private readonly visit: RowVisitor) {}

  push(chunk: Uint8Array): void {
    const base = this.fileOffset;
    this.fileOffset += chunk.length;
    let nl = chunk.indexOf(NL);
    if (nl === -1) {
      this.keep(chunk);
      return;
    }
    let pos = 0;
    if (this.carryBytes > 0) {
      const lineOffset = base - this.carryBytes;
      this.keep(chunk.subarray(0, nl));
      const line = this.takeCarry();
      this.line(line, 0, line.length, lineOffset);
      pos = nl + 1;
      nl = chunk.indexOf(NL, pos);
    }
    while (nl !== -1) {
      this.line(chunk, pos, nl, base + pos);
      pos = nl + 1;
      nl = chunk.indexOf(NL, pos);
    }
    if (pos < chunk.length) this.keep(chunk.subarray(pos));
  }

  /** The last line may lack its newline. */
  end(): void {
    if (this.carryBytes === 0) return;
    const lineOffset = this.fileOffset - this.carryBytes;
    const line = this.takeCarry();
    this.line(line, 0, line.length, lineOffset);
  }

  private keep(part: Uint8Array): void {
    // The source may reuse a chunk once it is handed on: keep a copy.
    this.carry.push(part.slice());
    this.carryBytes += part.length;
  }

  private takeCarry(): Uint8Array {
    const line = concat(this.carry, this.carryBytes);
    this.carry = [];
    this.carryBytes = 0;
    return line;
  }

  private line(buf: Uint8Array, start: number, end: number, offset: number): void {
    if (start >= end || buf[start] !== OPEN_BRACE) return;
    while (end > start && (buf[end - 1] === COMMA || buf[end - 1] === CR)) end--;
    this.visit(buf, start, end, this.rows++, offset);
  }
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Visits every row of a stream; resolves to the number of rows. */
export async function forEachRow(stream: ReadableStream<Uint8Array>, visit: RowVisitor): Promise<number> {
  const splitter = new RowSplitter(visit);
  for await (const chunk of stream) splitter.push(chunk);
  splitter.end();
  return splitter.rows;
}
