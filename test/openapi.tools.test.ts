import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import createClient from "openapi-fetch";
import { spaceKey } from "../src/services/spaces";
import { fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * The service's /openapi.json as tools take it, with their default options:
 * Redocly's recommended ruleset finds no error and only the warnings
 * docs/decisions/openapi.md justifies; openapi-typescript makes types that
 * compile against a typed call of every operation (test/openapi-client/calls.ts),
 * and those calls, run against the service, get the statuses they expect
 * with bodies that fit the schemas declared for them.
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is walked generically
type Json = any;

const ROOT = join(import.meta.dir, "..");
const BIN = join(ROOT, "node_modules", ".bin");
const OPENAPI_TYPESCRIPT = join(ROOT, "packages", "client", "node_modules", ".bin", "openapi-typescript");
const DECISION = readFileSync(join(ROOT, "docs", "decisions", "openapi.md"), "utf8");

/** The warnings the document keeps, each justified in docs/decisions/openapi.md. */
const JUSTIFIED = [
  "info-license #/info",
  "no-ambiguous-paths #/paths/~1pipeline-runs~1{id}~1reprocess",
  "no-ambiguous-paths #/paths/~1pipeline-runs~1{id}~1retry",
  "no-ambiguous-paths #/paths/~1pipeline-runs~1{id}~1status",
  "no-server-example.com #/servers/0/url",
];

let h: Harness;
let ws: TestWorkspace;
let doc: Json;
let dir: string;
let lint: ReturnType<typeof run>;
let types: ReturnType<typeof run>;

async function run(cmd: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
  const p = Bun.spawn(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

function operations(): string[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`));
}

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  const r = await h.request("GET", "/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
  dir = mkdtempSync(join(tmpdir(), "fps-openapi-"));
  writeFileSync(join(dir, "openapi.json"), JSON.stringify(doc, null, 2));
  // Both tools take seconds; they run side by side.
  lint = run([join(BIN, "redocly"), "lint", "openapi.json", "--extends=recommended", "--format=json"], dir);
  types = run([OPENAPI_TYPESCRIPT, "openapi.json", "-o", "schema.d.ts"], dir);
  await Promise.all([lint, types]);
}, 120_000); // seconds of work each; far more on a loaded machine

afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("/openapi.json with tools' default options", () => {
  test("redocly lint (recommended): no errors, and only the warnings the decisions page justifies", async () => {
    const r = await lint;
    const report = JSON.parse(r.out.slice(r.out.indexOf("{"))) as { totals: { errors: number; warnings: number }; problems: Json[] };
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location?.[0]?.pointer} ${p.message}`);
    expect(report.totals.errors, problems.join("\n")).toBe(0);
    const warnings = report.problems.map((p) => `${p.ruleId} ${p.location?.[0]?.pointer}`).sort();
    expect(warnings, problems.join("\n")).toEqual(JUSTIFIED);
    expect(warnings.length).toBeLessThanOrEqual(5);
    for (const rule of new Set(report.problems.map((p) => p.ruleId as string))) expect(DECISION, `${rule} is justified`).toContain(`\`${rule}\``);
  });

  describe("openapi-typescript's types", () => {
    beforeAll(async () => {
      const r = await types;
      expect(r.code, r.err).toBe(0);
      copyFileSync(join(ROOT, "test", "openapi-client", "calls.ts"), join(dir, "calls.ts"));
      symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
    });

    test("compile against a typed call of every operation (TypeScript 7, strict)", async () => {
      const compilerOptions = { strict: true, noEmit: true, target: "ESNext", module: "Preserve", moduleResolution: "bundler", lib: ["ESNext", "DOM"], types: [], skipLibCheck: true };
      writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["calls.ts"] }));
      const r = await run([join(BIN, "tsc"), "-p", "tsconfig.json"], dir);
      expect(r.out + r.err, "tsc").toBe("");
      expect(r.code).toBe(0);
    }, 60_000);

    test("a member marked wrongly is a compile error: the check can fail", async () => {
      // The same calls against types where one optional request member (SearchFilesInput's exactMatch, which has a default) is required.
      const sub = join(dir, "broken");
      mkdirSync(sub);
      const generated = readFileSync(join(dir, "schema.d.ts"), "utf8");
      expect(generated.split("exactMatch?: boolean;").length, "exactMatch appears once, optional").toBe(2);
      writeFileSync(join(sub, "schema.d.ts"), generated.replace("exactMatch?: boolean;", "exactMatch: boolean;"));
      for (const f of ["calls.ts", "tsconfig.json"]) copyFileSync(join(dir, f), join(sub, f));
      symlinkSync(join(ROOT, "node_modules"), join(sub, "node_modules"), "dir");
      const r = await run([join(BIN, "tsc"), "-p", "tsconfig.json"], sub);
      expect(r.code).not.toBe(0);
      expect(r.out).toContain("exactMatch");
    }, 60_000);

    test("every operation has its example, and each call gets the status it expects from the service", async () => {
      // Typed where it was compiled; here only its shape matters (importing its type would pull it into the project's check).
      type Example = { status?: number; call(api: unknown, ids: Record<string, string>): Promise<{ response: Response }> };
      const { examples } = (await import(join(dir, "calls.ts"))) as { examples: Record<string, Example> };
      expect(Object.keys(examples).sort()).toEqual(operations().sort());

      const pipeline = await fixturePipeline(h, ws);
      const ids: Record<string, string> = { pipeline: pipeline.id, space: pipeline.connectionId };
      ids.run = (await fixtureRun(h, ws, pipeline, { rows: [{ SKU: "A-1", Qty: 3 }] })).id;
      ids.otherRun = (await fixtureRun(h, ws, pipeline, { rows: [{ SKU: "A-1", Qty: 4 }] })).id;
      await h.svc.storage.put(spaceKey(ws.workspaceId, pipeline.connectionId, "reports/q1.csv"), "SKU,Qty\n");
      const api = createClient<Json>({
        baseUrl: "http://localhost",
        headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25" },
        fetch: (request: Request) => h.service.http.handle(request),
      });
      // Each answer must also fit the schema the document declares for its status.
      const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
      const base = "https://fps.test/openapi.json";
      ajv.addSchema({ $id: base, components: doc.components });
      const absolute = (v: Json): Json =>
        Array.isArray(v)
          ? v.map(absolute)
          : v && typeof v === "object"
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === "$ref" ? `${base}${x}` : absolute(x)]))
            : v;
      const unfit = (method: string, path: string, status: number, body: unknown): string | null => {
        let declared = doc.paths[path][method.toLowerCase()].responses[String(status)];
        if (!declared) return `${status} is not declared`;
        if (declared.$ref) declared = doc.components.responses[declared.$ref.split("/").pop()];
        const validate = ajv.compile({ $id: `https://fps.test/${method}${path}/${status}`, ...absolute(declared.content["application/json"].schema) });
        return validate(body) ? null : `the ${status} body does not fit: ${ajv.errorsText(validate.errors)}`;
      };
      const failures: string[] = [];
      for (const [key, example] of Object.entries(examples)) {
        let result: { data?: unknown; error?: unknown; response: Response };
        try {
          result = await example.call(api, ids);
        } catch (e) {
          failures.push(`${key}: ${(e as Error).message}`);
          continue;
        }
        // openapi-fetch has read the body: `data` on success, `error` otherwise.
        const { status, ok } = result.response;
        const body = ok ? result.data : result.error;
        const [method, path] = key.split(" ") as [string, string];
        if (status !== (example.status ?? 200)) failures.push(`${key}: ${status} ${JSON.stringify(body)}`);
        else {
          const problem = unfit(method, path, status, body);
          if (problem) failures.push(`${key}: ${problem}`);
        }
      }
      expect(failures).toEqual([]);
    }, 60_000);
  });
});
