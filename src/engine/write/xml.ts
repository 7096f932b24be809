import type { RowWriter } from "./types";

// XML 1.0 cannot carry most C0 controls, lone surrogates or U+FFFE/U+FFFF, even escaped.
const INVALID_XML_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const SPECIAL = /[&<>]/g;
const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };

export function escapeXmlText(s: string): string {
  return s.replace(INVALID_XML_CHARS, "").replace(SPECIAL, (c) => ENTITIES[c]!);
}

/**
 * A column name as an element name: characters outside [A-Za-z0-9_.-] become
 * `_`, a name that does not start with a letter or `_` (or starts with the
 * reserved `xml`) gets a leading `_`, and names that collide after that get
 * `_2`, `_3`... in column order.
 */
export function elementNames(columns: readonly string[]): string[] {
  const taken = new Set<string>();
  return columns.map((c) => {
    let name = c.replace(/[^A-Za-z0-9_.-]/g, "_");
    if (!/^[A-Za-z_]/.test(name) || /^xml/i.test(name)) name = `_${name}`;
    let unique = name;
    for (let n = 2; taken.has(unique); n++) unique = `${name}_${n}`;
    taken.add(unique);
    return unique;
  });
}

function textOf(v: unknown): string {
  if (typeof v === "string") return escapeXmlText(v);
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "object") return escapeXmlText(JSON.stringify(v));
  return escapeXmlText(String(v));
}

/**
 * XML for outbound delivery: `<rows>` of `<row>` elements, one child per
 * column in column order; a missing value has no element, null an empty one.
 */
export function xmlWriter(columns: readonly string[]): RowWriter {
  const names = elementNames(columns);
  const fields = [...columns];
  return {
    format: "xml",
    contentType: "application/xml",
    begin: () => '<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n',
    rows(rows, count = rows.length) {
      let out = "";
      for (let i = 0; i < count; i++) {
        const r = rows[i]!;
        out += "<row>";
        for (let j = 0; j < fields.length; j++) {
          const f = fields[j]!;
          if (!Object.hasOwn(r, f)) continue;
          const v = r[f];
          const n = names[j]!;
          out += v === null || v === undefined ? `<${n}/>` : `<${n}>${textOf(v)}</${n}>`;
        }
        out += "</row>\n";
      }
      return out;
    },
    end: () => "</rows>\n",
  };
}
