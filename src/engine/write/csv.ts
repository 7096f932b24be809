import Papa from "papaparse";
import type { RowWriter } from "./types";

/** A value as one CSV cell: nested values as JSON text, missing and null as an empty cell. */
function cell(v: unknown): unknown {
  if (v === undefined || v === null) return "";
  if (typeof v === "object" && !(v instanceof Date)) return JSON.stringify(v);
  return v;
}

/**
 * CSV for outbound delivery: a header of the target columns, RFC 4180
 * quoting (papaparse's unparse, a batch at a time) and CRLF line ends.
 */
export function csvWriter(columns: readonly string[]): RowWriter {
  const fields = [...columns];
  const unparse = (data: unknown[][]) => Papa.unparse({ fields, data }, { header: false, newline: "\r\n", quotes: false });
  return {
    format: "csv",
    contentType: "text/csv",
    begin: () => `${Papa.unparse([fields], { newline: "\r\n" })}\r\n`,
    rows(rows, count = rows.length) {
      if (count === 0) return "";
      const data: unknown[][] = new Array(count);
      for (let i = 0; i < count; i++) {
        const r = rows[i]!;
        data[i] = fields.map((f) => cell(Object.hasOwn(r, f) ? r[f] : undefined));
      }
      return `${unparse(data)}\r\n`;
    },
    end: () => "",
  };
}
