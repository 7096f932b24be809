import type { OutputFormat } from "../types";
import { csvWriter } from "./csv";
import { jsonWriter } from "./json";
import type { RowWriter } from "./types";
import { xmlWriter } from "./xml";

export type { RowWriter } from "./types";
export { jsonWriter } from "./json";
export { csvWriter } from "./csv";
export { xmlWriter } from "./xml";

export function createWriter(format: OutputFormat, columns: readonly string[]): RowWriter {
  if (format === "csv") return csvWriter(columns);
  if (format === "xml") return xmlWriter(columns);
  return jsonWriter();
}
