// The client package as published: generated from the service's own document (no drift), declarations that an
// integrator's program compiles against, and a browser entry that imports nothing from Node.
import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generate, serviceDocument } from "../scripts/generate-client";

const PKG = join(import.meta.dir, "../packages/client");

describe("@file-pipeline/client", () => {
  test("openapi.json and src/schema.d.ts are what the service's document generates today (run `npm run client:generate`)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fps-gen-"));
    try {
      expect(JSON.parse(readFileSync(join(PKG, "openapi.json"), "utf8"))).toEqual(JSON.parse(await serviceDocument()));
      await generate(dir);
      expect(readFileSync(join(dir, "src/schema.d.ts"), "utf8")).toBe(readFileSync(join(PKG, "src/schema.d.ts"), "utf8"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test("the built declarations type an integrator's program; a wrong call does not compile", () => {
    const dir = mkdtempSync(join(PKG, ".build-"));
    try {
      const tsc = join(PKG, "node_modules/.bin/tsc");
      const build = Bun.spawnSync([tsc, "-p", join(PKG, "tsconfig.json"), "--outDir", join(dir, "dist")], { stdout: "pipe" });
      expect(build.stdout.toString()).toBe("");
      cpSync(join(PKG, "src/schema.d.ts"), join(dir, "dist/schema.d.ts"));
      // The example sees the package only through its built declarations, as an installed dependency would.
      const program = (body: string) => {
        writeFileSync(join(dir, "example.ts"), body);
        writeFileSync(
          join(dir, "tsconfig.json"),
          JSON.stringify({
            compilerOptions: {
              target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["node"], skipLibCheck: false,
              lib: ["ES2023", "DOM"],
              paths: { "@file-pipeline/client": [join(dir, "dist/index.d.ts")], "@file-pipeline/client/node": [join(dir, "dist/node.d.ts")] },
              typeRoots: [join(PKG, "../../node_modules/@types")],
            },
            files: [join(dir, "example.ts")],
          }),
        );
        const r = Bun.spawnSync([tsc, "-p", join(dir, "tsconfig.json")], { stdout: "pipe", stderr: "pipe", cwd: PKG });
        return r.stdout.toString() + r.stderr.toString();
      };
      const example = readFileSync(join(PKG, "examples/integrate.ts"), "utf8");
      expect(program(example)).toBe("");
      // Two mistakes an integrator could make: a path parameter by the wrong name, a status the service does not have.
      const wrong = program(example.replace("params: { path: { id: pipelineId } }", "params: { path: { pipelineId } }").replace('status: "failed"', 'status: "broken"'));
      expect(wrong).toContain("'pipelineId' does not exist");
      expect(wrong).toContain('"broken"');
      expect(wrong.match(/error TS/g)).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  test("the browser entry bundles for the browser without a Node module", async () => {
    const out = await Bun.build({ entrypoints: [join(PKG, "src/index.ts")], target: "browser", minify: true });
    expect(out.success).toBe(true);
    const text = await out.outputs[0]!.text();
    expect(text).not.toMatch(/node:(fs|http|https|path|stream|os)/);
    expect(text).toContain("x-api-key");
  });
});
