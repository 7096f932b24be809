import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GUIDE_DIR, readGuide } from "../src/http/openapi-guide";
import { Harness } from "./helpers/harness";

/**
 * The OpenAPI descriptions are the API guide's own text: every operation of
 * /openapi.json is described by a paragraph of docs/guide marked
 * `<!-- openapi: METHOD /path -->`, word for word, and every mark names an
 * operation (or a schema, `<!-- openapi: schema Name -->`) the document has.
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is walked generically
type Json = any;

let h: Harness;
let doc: Json;

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  const r = await h.request("GET", "/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
});
afterAll(() => h.close());

interface Mark {
  page: string;
  name: string;
  paragraph: string;
}

/** The marks of the guide as a reader finds them: each mark line, and the paragraph under the marks above it. */
function marks(dir = GUIDE_DIR): Mark[] {
  const out: Mark[] = [];
  for (const page of readdirSync(dir).filter((f) => f.endsWith(".md"))) {
    const lines = readFileSync(join(dir, page), "utf8").split("\n");
    lines.forEach((line, i) => {
      const m = /^<!-- openapi: (.*) -->$/.exec(line);
      if (!m) return;
      let j = i + 1;
      while (/^<!-- openapi:/.test(lines[j]!)) j++;
      const paragraph: string[] = [];
      while (j < lines.length && lines[j]!.trim() !== "") paragraph.push(lines[j++]!.trim());
      out.push({ page, name: m[1]!, paragraph: paragraph.join(" ") });
    });
  }
  return out;
}

/** A link to another page of the repository reads as its text (`[versions.md](versions.md)` -> `versions.md`). */
const asText = (paragraph: string) => paragraph.replace(/\[([^\]]+)\]\((?!https?:)[^)]*\)/g, "$1");

const operations = (): [string, Json][] =>
  Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops as object).map(([m, op]) => [`${m.toUpperCase()} ${path}`, op] as [string, Json]));

describe("descriptions from the API guide", () => {
  test("every operation is described by a marked paragraph of the guide, word for word", () => {
    const byName = new Map(marks().map((m) => [m.name, m]));
    const missing = operations()
      .filter(([name]) => !byName.has(name))
      .map(([name]) => name);
    expect(missing, "operations the guide does not describe: mark a paragraph with <!-- openapi: METHOD /path -->").toEqual([]);
    for (const [name, op] of operations()) expect(op.description, name).toBe(asText(byName.get(name)!.paragraph));
  });

  test("every mark names an operation or a schema of the document", () => {
    const ops = new Set(operations().map(([name]) => name));
    const schemas = new Set(Object.keys(doc.components.schemas));
    const unknown = marks().filter((m) => {
      const schema = /^schema (\S+)$/.exec(m.name);
      return schema ? !schemas.has(schema[1]!) : !ops.has(m.name);
    });
    expect(unknown.map((m) => `${m.page}: ${m.name}`)).toEqual([]);
  });

  test("marked schemas carry the guide's text; unmarked ones keep their own", () => {
    const schemaMarks = marks().filter((m) => m.name.startsWith("schema "));
    expect(schemaMarks.length).toBeGreaterThan(0);
    for (const m of schemaMarks) expect(doc.components.schemas[m.name.slice("schema ".length)].description).toBe(asText(m.paragraph));
    expect(doc.components.schemas.AuditEvent.description).toBe("One change: who made it, to what, when, from where and through which surface.");
  });

  test("the text is the guide's: what it says of retries and of the rejects file", () => {
    const op = (method: string, path: string) => doc.paths[path][method].description as string;
    expect(op("post", "/pipeline-runs/{id}/retry")).toContain("with the pipeline and schema as they are now");
    expect(op("get", "/files/pipeline-runs/{id}/rejects")).toContain("A run that skipped or quarantined rows keeps them in a rejects file");
    // A link to another page of the guide would not resolve from /docs: its text stays, the target goes.
    expect(op("post", "/pipeline-runs/{id}/retry")).toContain("(fix-and-resend.md)");
    for (const [name, o] of operations()) expect(o.description, name).not.toMatch(/\]\((?!https?:)[^)]*\)/);
  });
});

describe("readGuide refuses marks it cannot honour, naming where they are", () => {
  const dir = mkdtempSync(join(tmpdir(), "fps-guide-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const guide = (text: string) => {
    for (const f of readdirSync(dir)) rmSync(join(dir, f));
    writeFileSync(join(dir, "page.md"), text);
    return () => readGuide(dir);
  };

  test("marks stack on one paragraph, whose lines are joined and whose links become text", () => {
    const g = guide("# T\n\n<!-- openapi: GET /a -->\n<!-- openapi: schema A -->\n`GET /a` lists\n[things](other.md#x), see [the RFC](https://example.com/rfc).\n\nnext\n")();
    expect(g.operations.get("GET /a")).toEqual({ text: "`GET /a` lists things, see [the RFC](https://example.com/rfc).", at: "page.md:5" });
    expect(g.schemas.get("A")!.text).toBe(g.operations.get("GET /a")!.text);
  });

  test("a mark before anything but a paragraph, a mark of another form, a second mark of one operation", () => {
    expect(guide("<!-- openapi: GET /a -->\n\ntext\n")).toThrow("docs/guide/page.md:2: an openapi mark must stand right before a paragraph");
    expect(guide("<!-- openapi: GET /a -->\n| a | b |\n")).toThrow("page.md:2: an openapi mark must stand right before a paragraph");
    expect(guide("<!-- openapi: GET /a -->\n- item\n")).toThrow("must stand right before a paragraph");
    expect(guide("<!-- openapi: FETCH /a -->\ntext\n")).toThrow("'FETCH /a' is neither 'METHOD /path' nor 'schema Name'");
    expect(guide("<!-- openapi: GET /a -->\none\n\n<!-- openapi: GET /a -->\ntwo\n")).toThrow("page.md:5: 'GET /a' is described already at docs/guide/page.md:2");
  });
});
