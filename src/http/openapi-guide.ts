import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The OpenAPI descriptions come from the API guide (docs/guide/*.md), so
 * that the reference and the guide say one thing in one text. A paragraph
 * of the guide is marked for an operation, or for a named schema, by a
 * comment on the line before it (several may stack on one paragraph):
 *
 *     <!-- openapi: GET /pipelines/{id} -->
 *     <!-- openapi: schema PipelineRun -->
 *
 * The description is the paragraph's lines joined by spaces, with links to
 * other pages of the repository reduced to their text (they would not
 * resolve from /docs). docs/decisions/openapi.md.
 */

export const GUIDE_DIR = join(import.meta.dir, "..", "..", "docs", "guide");

const ANCHOR = /^<!-- openapi: (.+?) -->$/;
const OPERATION = /^(GET|POST|PUT|PATCH|DELETE) (\/\S*)$/;
const SCHEMA = /^schema ([A-Za-z][A-Za-z0-9]*)$/;
/** A marked block must be a plain paragraph: not a heading, table, list, quote, fence or comment. */
const NOT_A_PARAGRAPH = /^(#|\||```|[-*+] |\d+\. |>|<!--)/;

export interface GuideText {
  text: string;
  /** Where the paragraph is: `pipelines.md:42`. */
  at: string;
}

export interface GuideDescriptions {
  /** By `METHOD /path`, the path as OpenAPI writes it (`{id}`). */
  operations: Map<string, GuideText>;
  /** By the schema's component name. */
  schemas: Map<string, GuideText>;
}

/** A paragraph's lines as one description. */
export function descriptionOf(lines: readonly string[]): string {
  return lines
    .map((l) => l.trim())
    .join(" ")
    .replace(/\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:)[^)]*\)/g, "$1");
}

/** The marked paragraphs of the guide's pages; a malformed or repeated mark throws, naming where it is. */
export function readGuide(dir: string = GUIDE_DIR): GuideDescriptions {
  const out: GuideDescriptions = { operations: new Map(), schemas: new Map() };
  const pages = readdirSync(dir)
    .filter((f) => f.endsWith(".md"))
    .sort();
  for (const page of pages) {
    const lines = readFileSync(join(dir, page), "utf8").split("\n");
    for (let i = 0; i < lines.length; ) {
      const names: string[] = [];
      for (let m = ANCHOR.exec(lines[i]!.trim()); m; m = ANCHOR.exec((lines[++i] ?? "").trim())) names.push(m[1]!.trim());
      if (names.length === 0) {
        i++;
        continue;
      }
      const at = `${page}:${i + 1}`;
      const paragraph: string[] = [];
      while (i < lines.length && lines[i]!.trim() !== "") paragraph.push(lines[i++]!);
      if (paragraph.length === 0 || NOT_A_PARAGRAPH.test(paragraph[0]!.trim())) {
        throw new Error(`docs/guide/${at}: an openapi mark must stand right before a paragraph`);
      }
      const text: GuideText = { text: descriptionOf(paragraph), at };
      for (const name of names) {
        const op = OPERATION.exec(name);
        const schema = SCHEMA.exec(name);
        const into = op ? out.operations : schema ? out.schemas : null;
        if (!into) throw new Error(`docs/guide/${at}: '${name}' is neither 'METHOD /path' nor 'schema Name'`);
        const key = op ? `${op[1]} ${op[2]}` : schema![1]!;
        const before = into.get(key);
        if (before) throw new Error(`docs/guide/${at}: '${name}' is described already at docs/guide/${before.at}`);
        into.set(key, text);
      }
    }
  }
  return out;
}
