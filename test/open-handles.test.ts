import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The check test/preload.ts installs (test/helpers/open-handles.ts), run on two small test files of
// its own in a folder of their own: one leaves five kinds of things running, one stops everything.

const dir = mkdtempSync(join(tmpdir(), "fps-open-handles-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fixtures = join(import.meta.dir, "fixtures", "open-handles");
cpSync(join(fixtures, "leaky.ts"), join(dir, "leaky.test.ts"));
cpSync(join(fixtures, "tidy.ts"), join(dir, "tidy.test.ts"));
cpSync(join(fixtures, "idle-worker.ts"), join(dir, "idle-worker.ts"));
writeFileSync(join(dir, "bunfig.toml"), `[test]\npreload = [${JSON.stringify(join(import.meta.dir, "preload.ts"))}]\n`);

async function bunTest(file: string): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn([process.execPath, "test", `./${file}`], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, FORCE_COLOR: "0" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, output: stdout + stderr };
}

describe("a test file that leaves something running", () => {
  test("fails, naming the file and each thing it left", async () => {
    const { code, output } = await bunTest("leaky.test.ts");
    expect(code).not.toBe(0);
    expect(output).toContain("left 5 running after its tests");
    expect(output).toContain("leaky.test.ts left");
    for (const kind of ["Bun.serve on port", "net server", "setInterval", "worker thread", "idle-worker.ts", "child process 'sleep 30'"]) expect(output).toContain(kind);
    // Its tests themselves passed: the failure is the file's.
    expect(output).toMatch(/5 pass/);
  }, 60_000);

  test("a file that stops what it starts passes", async () => {
    const { code, output } = await bunTest("tidy.test.ts");
    expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining("1 pass") });
    expect(output).not.toContain("running after its tests");
  }, 60_000);
});
