import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

// The layers, checked from the files' own imports: the engine imports no service,
// no database and no transport; db/ imports no service; services import no transport;
// one module paces the collector (docs/decisions/layers-and-tests.md). The run path's
// doors enter through ingest() alone, and its run-event consumers are one list (docs/architecture.md).

const ROOT = resolve(import.meta.dir, "..");

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => join(dir, f));
}

// Every module a file names, type-only imports included (Bun's own scanner drops those, as the
// compiler erases them; a type import still ties the layers together).
const FROM = /^[ \t]*(?:import|export)\b[^;"'`=]*?\bfrom\s*["']([^"'\n]+)["']/gm;
const BARE = /^[ \t]*import\s*["']([^"'\n]+)["']/gm;
const DYNAMIC = /\b(?:import|require)\(\s*["']([^"'\n]+)["']\s*\)/g;
const WORKER = /new URL\(\s*["']([^"'\n]+)["'],\s*import\.meta\.url\s*\)/g;

function specifiers(code: string): string[] {
  const out = new Set<string>();
  for (const re of [FROM, BARE, DYNAMIC, WORKER]) for (const m of code.matchAll(re)) out.add(m[1]!);
  return [...out];
}

interface Edge {
  from: string;
  spec: string;
  /** Repository-relative path of a relative import; the package name otherwise. */
  target: string;
}

function edges(files: string[]): Edge[] {
  return files.flatMap((from) =>
    specifiers(readFileSync(join(ROOT, from), "utf8")).map((spec) => ({
      from,
      spec,
      target: spec.startsWith(".") ? relative(ROOT, resolve(ROOT, dirname(from), spec)) : spec,
    })),
  );
}

const under = (prefixes: string[]) => (e: Edge) => prefixes.some((p) => e.target === p || e.target.startsWith(`${p}/`));
const pkg = (names: RegExp) => (e: Edge) => !e.spec.startsWith(".") && names.test(e.spec);
const show = (list: Edge[]) => list.map((e) => `${e.from} imports ${e.spec}`);

/** Servers and protocol libraries: what a transport is made of. */
const TRANSPORT_PACKAGES = /^(elysia|@elysiajs\/|graphql|@graphql-|@pothos\/|@trpc\/|ssh2|smtp-server)/;
const TRANSPORTS = ["src/http", "src/transport", "src/sftp", "src/smtp", "graphql", "trpc", "web"];

const engine = edges(sources("src/engine"));
const services = edges(sources("src/services"));
const database = edges(sources("db"));

describe("the scanner", () => {
  test("sees type-only, multi-line, re-exported and dynamic imports", () => {
    const code = [
      'import type { A } from "./a";',
      "import {",
      "  type B,",
      '} from "./b";',
      'export * from "./c";',
      'export type { D } from "./d";',
      'const e = await import("./e");',
      'const w = new Worker(new URL("./f.ts", import.meta.url).href);',
      'import "./g";',
      'const j = require("./j");',
      '// import h from "./h" in a comment is not an import',
      'export const i = "./i";',
    ].join("\n");
    expect(specifiers(code).sort()).toEqual(["./a", "./b", "./c", "./d", "./e", "./f.ts", "./g", "./j"]);
  });

  test("finds at least what Bun's scanner finds in every checked file", () => {
    const ts = new Bun.Transpiler({ loader: "ts" });
    const tsx = new Bun.Transpiler({ loader: "tsx" });
    for (const file of [...sources("src/engine"), ...sources("src/services"), ...sources("db")]) {
      const code = readFileSync(join(ROOT, file), "utf8");
      const ours = new Set(specifiers(code));
      const missed = (file.endsWith(".tsx") ? tsx : ts).scanImports(code).filter((i) => !ours.has(i.path));
      expect({ file, missed }).toEqual({ file, missed: [] });
    }
  });

  test("resolves the imports it checks (the engine's on the domain, a service's on the engine)", () => {
    expect(engine.some((e) => e.from === "src/engine/map.ts" && e.target === "src/domain/mappings")).toBe(true);
    expect(services.some((e) => e.target.startsWith("src/engine/"))).toBe(true);
  });
});

describe("layers", () => {
  test("the engine imports no service, no database and no transport", () => {
    const bad = engine.filter((e) => under(["src/services", "db", ...TRANSPORTS])(e) || pkg(TRANSPORT_PACKAGES)(e) || pkg(/^drizzle-orm|^postgres$|^bun:sqlite$/)(e));
    expect(show(bad)).toEqual([]);
  });

  test("the database imports no service and no transport (what it stores the shape of comes from src/domain)", () => {
    const bad = database.filter((e) => under(["src/services", ...TRANSPORTS])(e) || pkg(TRANSPORT_PACKAGES)(e));
    expect(show(bad)).toEqual([]);
  });

  test("services import no transport", () => {
    const bad = services.filter((e) => under(TRANSPORTS)(e) || pkg(TRANSPORT_PACKAGES)(e));
    expect(show(bad)).toEqual([]);
  });

  test("only src/runtime/gc.ts asks for garbage collections", () => {
    const everywhere = ["src", "db", "graphql", "trpc"].flatMap(sources);
    const callers = everywhere.filter((f) => {
      const code = readFileSync(join(ROOT, f), "utf8");
      return /\bBun\.gc\(|\b(?:fullGC|edenGC)\b[^\n]*from "bun:jsc"/.test(code);
    });
    expect(callers).toEqual(["src/runtime/gc.ts"]);
  });
});

describe("the run path", () => {
  const RUN_PATH = "src/services/run-path";
  const code = ["src", "graphql", "trpc"].flatMap(sources).map((file) => ({ file, text: readFileSync(join(ROOT, file), "utf8") }));

  test("the consumers of run events are one frozen list in announce/index.ts, and nothing registers one at import", async () => {
    const { RUN_EVENT_CONSUMERS } = await import("../src/services/run-path/announce");
    expect(RUN_EVENT_CONSUMERS.map((c) => c.name)).toEqual(["webhooks", "notifications"]);
    expect(Object.isFrozen(RUN_EVENT_CONSUMERS)).toBe(true);
    // No registration function exists, and only the announce module (and the path's index, which re-exports it) names the list.
    expect(code.filter((f) => /\bonRunEvent\b/.test(f.text)).map((f) => f.file)).toEqual([]);
    const naming = code.filter((f) => /\bRUN_EVENT_CONSUMERS\b/.test(f.text)).map((f) => f.file);
    expect(naming.sort()).toEqual([`${RUN_PATH}/announce/index.ts`, `${RUN_PATH}/index.ts`]);
    // A consumer module is imported by the announce module, not by whoever happens to load first (no side-effect imports of fan-out).
    const sideEffect = code.filter((f) => /^[ \t]*import\s*["'][^"']*fan-out["']/m.test(f.text)).map((f) => f.file);
    expect(sideEffect).toEqual([]);
  });

  test("every door enters through ingest(): only the ingest stage starts runs itself", () => {
    const starters = code
      .filter((f) => !f.file.startsWith(`${RUN_PATH}/ingest/`))
      .filter((f) => /\b(?:startRun|startInboundRuns|startAttempt)\s*\(/.test(f.text))
      .map((f) => f.file);
    expect(starters).toEqual([]);
    const callers = code.filter((f) => !f.file.startsWith(`${RUN_PATH}/ingest/`) && /\bingest\(\s*(?:ctx|svc)\b/.test(f.text)).map((f) => f.file);
    // The REST upload, hosted SFTP and documents, customer SFTP, e-mail, outbound complete, retry and reprocess.
    expect(callers.sort()).toEqual(
      [
        "src/http/routes/runs.ts",
        `${RUN_PATH}/doors/space-arrival.ts`,
        `${RUN_PATH}/doors/sftp-poll.ts`,
        `${RUN_PATH}/doors/email/receive.ts`,
        "src/services/outbound/complete-upload.ts",
        "src/services/runs/retry-run.ts",
        "src/services/runs/reprocess-run.ts",
      ].sort(),
    );
  });
});

// What REST, GraphQL and tRPC share (admission, the HTTP status table, body checks) lives in src/transport/;
// src/http/ is the Elysia app and its REST routes, which the other surfaces do not reach into.
describe("transports", () => {
  test("graphql/ and trpc/ import nothing from src/http/", () => {
    const bad = edges([...sources("graphql"), ...sources("trpc")]).filter(under(["src/http"]));
    expect(show(bad)).toEqual([]);
  });

  test("src/transport/ is no one framework's: it imports no server or protocol library and no single transport", () => {
    const bad = edges(sources("src/transport")).filter((e) => under(TRANSPORTS.filter((t) => t !== "src/transport"))(e) || pkg(TRANSPORT_PACKAGES)(e));
    expect(show(bad)).toEqual([]);
  });

  test("the rule sees a transport's imports (graphql/ on src/transport/)", () => {
    expect(edges(sources("graphql")).some((e) => e.target.startsWith("src/transport/"))).toBe(true);
  });
});
