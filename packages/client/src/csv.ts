import Papa from "papaparse";

/** A CSV file's rows as objects keyed by its header (papaparse; empty lines skipped). */
export function parseCsv(text: string): Record<string, string>[] {
  const r = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  if (r.errors.length > 0) throw new Error(`CSV row ${(r.errors[0]!.row ?? 0) + 2}: ${r.errors[0]!.message}`);
  return r.data;
}
