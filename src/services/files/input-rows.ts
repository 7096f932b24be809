import type { ObjectStore } from "../../adapters/storage/port";
import type { RunFile } from "./runs";

/**
 * A processed file holds the valid rows in input order; every other data
 * row of the input is listed, in order, in the run's rejects file (one line
 * `{"inputRow":n,...}` each, docs/decisions/rows.md). So the input row of the
 * processed file's row at position p is p + 1 plus the rejected rows before
 * it, found by reading the rejects' line heads: no row is parsed.
 */

const PREFIX = '{"inputRow":';

/** Whether the run's rejects file lists every row left out of its processed file (runs processed since rejects list skipped rows). */
export function inputRowsKnown(run: Pick<RunFile, "metadata" | "rejectsKey">): boolean {
  const rows = run.metadata.rows;
  if (!rows) return false;
  const left = rows.skipped + rows.quarantined;
  if (rows.total !== rows.valid + left) return false;
  if (left === 0) return true;
  const rejects = run.metadata.rejects as { rows?: number } | undefined;
  return run.rejectsKey !== null && rejects?.rows === left;
}

/** The input rows listed in a rejects file, in file order, read line by line. */
export async function* rejectedInputRows(store: ObjectStore, key: string): AsyncGenerator<number> {
  const body = await store.get(key);
  if (!body) return;
  const decoder = new TextDecoder();
  let carry = "";
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      const text = carry + (done ? decoder.decode() : decoder.decode(value, { stream: true }));
      let pos = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", pos)) {
        const n = lineRow(text, pos);
        if (n !== null) yield n;
        pos = nl + 1;
      }
      carry = text.slice(pos);
      if (done) break;
    }
    const n = lineRow(carry, 0);
    if (n !== null) yield n;
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function lineRow(text: string, at: number): number | null {
  if (!text.startsWith(PREFIX, at)) return null;
  let i = at + PREFIX.length;
  const from = i;
  while (i < text.length && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i++;
  return i > from ? Number(text.slice(from, i)) : null;
}

/** The input rows of processed-file positions `positions` (ascending), given the rejected input rows (ascending). */
export async function inputRowsOf(positions: readonly number[], rejected: AsyncIterable<number>): Promise<number[]> {
  const out: number[] = [];
  const it = rejected[Symbol.asyncIterator]();
  let before = 0;
  try {
    let next = await it.next();
    for (const p of positions) {
      while (!next.done && next.value <= p + 1 + before) {
        before++;
        next = await it.next();
      }
      out.push(p + 1 + before);
    }
  } finally {
    await it.return?.(undefined);
  }
  return out;
}
