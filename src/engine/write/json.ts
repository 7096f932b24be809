import type { RowWriter } from "./types";

/**
 * The processed-file layout, fixed because search and delta read it line by
 * line: `[\n`, one JSON object per line joined by `,\n`, then `\n]\n`; no
 * rows is `[\n]\n`. JSON.stringify never emits a raw newline, so each row
 * stays on one line.
 */
export function jsonWriter(): RowWriter {
  let first = true;
  return {
    format: "json",
    contentType: "application/json",
    begin: () => "[\n",
    rows(rows, count = rows.length) {
      if (count === 0) return "";
      let out = first ? JSON.stringify(rows[0]) : `,\n${JSON.stringify(rows[0])}`;
      for (let i = 1; i < count; i++) out += `,\n${JSON.stringify(rows[i])}`;
      first = false;
      return out;
    },
    end: () => (first ? "]\n" : "\n]\n"),
  };
}
