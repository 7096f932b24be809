// `fps`, the integrators' command-line tool, built from packages/client and run under Node.js against the real service.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { freePort, serve } from "./helpers/live";
import { createPipeline, ITEM_MAPPINGS, ITEMS_CSV } from "./helpers/runs";

const PKG = join(import.meta.dir, "../packages/client");
let build: string;
let h: Harness;
let ws: TestWorkspace;
let server: ReturnType<typeof serve>;
let base: string;
let home: string;

/** The package compiled as `npm run build` compiles it, into a folder of this test's own (so the source under test is what runs). */
function buildPackage(): string {
  const dir = mkdtempSync(join(PKG, ".build-"));
  const tsc = Bun.spawnSync([join(PKG, "node_modules/.bin/tsc"), "-p", join(PKG, "tsconfig.json"), "--outDir", dir], { stderr: "pipe", stdout: "pipe" });
  if (tsc.exitCode !== 0) throw new Error(`the client does not build: ${tsc.stdout.toString()}${tsc.stderr.toString()}`);
  cpSync(join(PKG, "src/schema.d.ts"), join(dir, "schema.d.ts"));
  return dir;
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function fps(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const p = Bun.spawn(["node", join(build, "cli.js"), ...args], {
    env: { PATH: process.env.PATH!, HOME: home, FPS_CONFIG: join(home, "fps.json"), FPS_URL: base, FPS_API_KEY: ws.apiKey, ...env },
    stdout: "pipe",
    stderr: "pipe",
    cwd: home,
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  build = buildPackage();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  h = await Harness.start({ env: { PUBLIC_URL: base } });
  ws = await h.workspace();
  server = serve(h, port);
  home = mkdtempSync(join(tmpdir(), "fps-cli-"));
}, 120_000);

afterAll(async () => {
  server?.stop(true);
  await h?.close();
  rmSync(build, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

describe("fps", () => {
  test("--help lists every command; each command has its own --help; an unknown one is one line and exit 2", async () => {
    const all = await fps(["--help"]);
    expect(all.code).toBe(0);
    for (const c of ["login", "upload", "runs list", "runs get", "runs tail", "runs ack", "runs retry", "get processed", "search", "delta", "outbound send", "docs ls", "docs put", "docs get", "docs rm"]) {
      expect(all.stdout).toContain(c);
    }
    const one = await fps(["runs", "retry", "--help"]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain("usage: fps runs retry <runId>");
    const bad = await fps(["frobnicate"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    const missing = await fps(["runs", "get"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("usage: fps runs get <runId>");
  });

  test("login checks the key and stores it readable by its owner only; a wrong key is refused in one line", async () => {
    const ok = await fps(["login", "--url", base, "--key", ws.apiKey], { FPS_API_KEY: "", FPS_URL: "" });
    expect(ok.code).toBe(0);
    const saved = JSON.parse(readFileSync(join(home, "fps.json"), "utf8"));
    expect(saved).toEqual({ url: base, apiKey: ws.apiKey });
    expect(statSync(join(home, "fps.json")).mode & 0o777).toBe(0o600);
    // The stored key is used when the environment has none.
    const list = await fps(["runs", "list", "--json"], { FPS_API_KEY: "", FPS_URL: "" });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([]);
    const wrong = await fps(["login", "--url", base, "--key", "fps_nope"], { FPS_API_KEY: "", FPS_URL: "" });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^fps: .*401 unauthorized/);
    expect(wrong.stderr.trim().split("\n")).toHaveLength(1);
  });

  test("upload follows the run to its end: counts and exit 0 when it completed, first errors and exit 1 when it failed", async () => {
    const { pipeline } = await createPipeline(h, ws);
    writeFileSync(join(home, "items.csv"), ITEMS_CSV);
    const ok = await fps(["upload", pipeline.id, join(home, "items.csv")]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("completed");
    expect(ok.stdout).toContain("3 valid");
    writeFileSync(join(home, "bad.csv"), "SKU,Qty,Name\na,x,b\n");
    const bad = await fps(["upload", pipeline.id, join(home, "bad.csv"), "--json"]);
    expect(bad.code).toBe(1);
    const run = JSON.parse(bad.stdout);
    expect(run.status).toBe("failed");
    expect(run.errorMessage).toBeTruthy();
  });

  test("runs list, get, ack, retry and tail; get processed and original; search; delta", async () => {
    const { pipeline } = await createPipeline(h, ws);
    writeFileSync(join(home, "v1.csv"), ITEMS_CSV);
    writeFileSync(join(home, "v2.csv"), "SKU,Qty,Name\na-1,3,Bolt\nd-4,1,Pin\n");
    const a = JSON.parse((await fps(["upload", pipeline.id, join(home, "v1.csv"), "--json"])).stdout);
    const b = JSON.parse((await fps(["upload", pipeline.id, join(home, "v2.csv"), "--json"])).stdout);
    const list = JSON.parse((await fps(["runs", "list", "--pipeline", pipeline.id, "--json"])).stdout);
    expect(list.map((r: { id: string }) => r.id).sort()).toEqual([a.id, b.id].sort());
    const got = JSON.parse((await fps(["runs", "get", a.id, "--json"])).stdout);
    expect(got.status).toBe("completed");
    const tail = await fps(["runs", "tail", a.id]);
    expect(tail.code).toBe(0);
    expect((await fps(["get", "processed", a.id, "-o", join(home, "out.json")])).code).toBe(0);
    expect(JSON.parse(readFileSync(join(home, "out.json"), "utf8"))).toHaveLength(3);
    const original = await fps(["get", "original", a.id]);
    expect(original.stdout).toBe(ITEMS_CSV);
    const hits = JSON.parse((await fps(["search", a.id, b.id, "--term", "bolt", "--json"])).stdout);
    expect(hits).toHaveLength(2);
    const delta = JSON.parse((await fps(["delta", a.id, b.id, "--json"])).stdout);
    expect(JSON.stringify(delta)).toContain("D-4");
    const acked = JSON.parse((await fps(["runs", "ack", a.id, "--json"])).stdout);
    expect(acked.status).toBe("acknowledged");
    const retry = await fps(["runs", "retry", b.id]);
    expect(retry.code).toBe(1);
    expect(retry.stderr).toContain("409");
  });

  test("get rejects saves the rows a run skipped, with their input row numbers; a run without any is a one-line 404", async () => {
    const { pipeline } = await createPipeline(h, ws, { mappings: { ...ITEM_MAPPINGS, validations: { onInvalidRow: "skip" } } });
    writeFileSync(join(home, "some-bad.csv"), "SKU,Qty,Name\na-1,3,Bolt\nb-2,many,Nut\n");
    const up = await fps(["upload", pipeline.id, join(home, "some-bad.csv"), "--json"]);
    expect(up.stderr).toBe("");
    const run = JSON.parse(up.stdout);
    expect(run.status).toBe("completed");
    expect((await fps(["get", "rejects", run.id, "-o", join(home, "rejects.json")])).code).toBe(0);
    const lines: { inputRow: number; outcome: string }[] = JSON.parse(readFileSync(join(home, "rejects.json"), "utf8"));
    expect(lines.filter((l) => l.inputRow === 2 && l.outcome === "skipped")).toHaveLength(1);
    writeFileSync(join(home, "clean.csv"), ITEMS_CSV);
    const clean = JSON.parse((await fps(["upload", pipeline.id, join(home, "clean.csv"), "--json"])).stdout);
    const none = await fps(["get", "rejects", clean.id]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("404");
  });

  test("outbound send reads a CSV file, sends it in parts and follows the delivery", async () => {
    const { pipeline } = await createPipeline(h, ws, { direction: "outbound", mappings: { fieldMappings: [{ source: "sku", target: "sku" }, { source: "qty", target: "qty", transform: "integer" }] }, definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" } } } });
    writeFileSync(join(home, "rows.csv"), "sku,qty\na,1\nb,2\n");
    const sent = await fps(["outbound", "send", pipeline.id, join(home, "rows.csv"), "--format", "csv", "--json"]);
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout).status).toBe("delivered");
    const bad = await fps(["outbound", "send", pipeline.id, join(home, "rows.csv"), "--format", "pdf"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--format must be csv, json or xml");
  });

  test("docs put, ls, get and rm in a connection's space", async () => {
    const conn = await h.ok(ws, "POST", "/connections", { name: "CLI docs" });
    writeFileSync(join(home, "report.txt"), "hello partner\n");
    expect((await fps(["docs", "put", conn.id, join(home, "report.txt"), "reports"])).code).toBe(0);
    const ls = JSON.parse((await fps(["docs", "ls", conn.id, "reports", "--json"])).stdout);
    expect(ls.map((e: { path: string }) => e.path)).toEqual(["reports/report.txt"]);
    expect((await fps(["docs", "get", conn.id, "reports/report.txt", "-o", join(home, "back.txt")])).code).toBe(0);
    expect(readFileSync(join(home, "back.txt"), "utf8")).toBe("hello partner\n");
    expect((await fps(["docs", "rm", conn.id, "reports/report.txt"])).code).toBe(0);
    expect(JSON.parse((await fps(["docs", "ls", conn.id, "reports", "--json"])).stdout)).toEqual([]);
  });

  test("a 1 GB upload streams from disk: the CLI's peak RSS stays under 150 MB", async () => {
    const { pipeline } = await createPipeline(h, ws);
    const path = join(home, "big.csv");
    const row = "z-1,5,Bolt\n".repeat(100_000);
    const fd = Bun.file(path).writer();
    fd.write("SKU,Qty,Name\n");
    let size = 0;
    while (size < 1024 ** 3) {
      fd.write(row);
      size += row.length;
    }
    await fd.end();
    const p = Bun.spawn(["node", join(build, "cli.js"), "upload", pipeline.id, path, "--no-follow", "--json"], {
      env: { PATH: process.env.PATH!, HOME: home, FPS_CONFIG: join(home, "fps.json"), FPS_URL: base, FPS_API_KEY: ws.apiKey },
      stdout: "pipe",
      stderr: "pipe",
    });
    let peakKb = 0;
    const watch = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, "utf8"));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch {}
    }, 20);
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    clearInterval(watch);
    rmSync(path, { force: true });
    expect(code, err).toBe(0);
    const run = JSON.parse(out);
    expect(run.size).toBe(size + "SKU,Qty,Name\n".length);
    expect(peakKb).toBeGreaterThan(0);
    expect(peakKb / 1024).toBeLessThan(150);
    console.log(`fps upload of ${(size / 1024 ** 3).toFixed(2)} GiB: CLI peak RSS ${(peakKb / 1024).toFixed(0)} MiB`);
  }, 300_000);
});
