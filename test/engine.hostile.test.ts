import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openInput } from "../src/engine/parse";
import { processFile } from "../src/engine/process";
import { localStore, request } from "./helpers/engine";
import { hostileCases, NS, sharedStringBomb, sheetUsingString0, workbookOf } from "./fixtures/hostile/generate";

/**
 * The hostile-file corpus (test/fixtures/hostile/): bombs and deep nesting
 * end in an EngineInputError naming the limit, with bounded memory, and a
 * failure no retry can fix is typed as the input's.
 */
const scratch = mkdtempSync(join(tmpdir(), "fps-hostile-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function* pieces(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += 64 * 1024) yield bytes.subarray(i, i + 64 * 1024);
}

async function readAll(bytes: Uint8Array, opts: Record<string, unknown>): Promise<string> {
  try {
    const input = await openInput(pieces(bytes), opts as never);
    let rows = 0;
    for await (const batch of input.batches) rows += batch.length;
    return `read ${rows} rows`;
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
}

describe("hostile corpus: each file stops at its limit, naming it", () => {
  for (const c of hostileCases) {
    test(`${c.name} (${c.filename})`, async () => {
      const bytes = await c.bytes();
      const outcome = await readAll(bytes, { filename: c.filename, ...c.options });
      expect(outcome).toStartWith("EngineInputError: ");
      expect(outcome).toContain(c.error);
    }, 60_000);
  }
});

describe("ordinary files next to the limits are read", () => {
  test("a workbook with a 20 MiB picture: binary parts are counted, not held to the cell limit", async () => {
    const picture = new Uint8Array(20 * 1024 * 1024);
    for (let i = 0; i < picture.length; i += 65536) crypto.getRandomValues(picture.subarray(i, i + 65536));
    // No `<` byte at all: XML parts with such a run would be refused.
    for (let i = 0; i < picture.length; i++) if (picture[i] === 0x3c) picture[i] = 0x3d;
    const book = await workbookOf(`<sst ${NS}><si><t>hello</t></si></sst>`, sheetUsingString0, {
      parts: [{ path: "xl/media/image1.png", source: (async function* () { yield picture; })() }],
    });
    expect(await readAll(book, { filename: "pictures.xlsx" })).toBe("read 1 rows");
  }, 60_000);
});

describe("a workbook bomb costs bounded memory in the engine", () => {
  /** Peak resident memory of a process that runs the engine over the file (one worker thread). */
  async function engineChild(bytes: Uint8Array, filename: string) {
    const path = join(scratch, filename);
    writeFileSync(path, bytes);
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "fixtures/hostile/engine-child.ts"), path, filename], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(code, err).toBe(0);
    return JSON.parse(out.trim().split("\n").at(-1)!) as { ok: boolean; failure?: string; errorMessage?: string; peakRssMiB: number };
  }

  test("one 512 MiB shared string in a 0.5 MB workbook: the run fails as the input's, under 400 MB", async () => {
    const bomb = await sharedStringBomb();
    expect(bomb.byteLength).toBeLessThan(1024 * 1024);
    const r = await engineChild(bomb, "bomb.xlsx");
    expect(r.ok).toBe(false);
    expect(r.failure).toBe("input");
    expect(r.errorMessage).toContain("MAX_DECOMPRESSION_RATIO");
    expect(r.peakRssMiB).toBeLessThan(400);
  }, 120_000);

  test("the same bomb declaring no size is stopped by the cell limit, under 400 MB", async () => {
    const bomb = await sharedStringBomb(512 * 1024 * 1024, 0);
    const r = await engineChild(bomb, "hidden-bomb.xlsx");
    expect(r.ok).toBe(false);
    expect(r.failure).toBe("input");
    // The ratio or the cell limit, whichever the reader meets first: both name their limit.
    expect(r.errorMessage).toMatch(/MAX_DECOMPRESSION_RATIO|limits\.maxRecordBytes/);
    expect(r.peakRssMiB).toBeLessThan(400);
  }, 120_000);
});

describe("failures no retry can fix are the input's", () => {
  test("a stack overflow (nesting past a raised depth limit) fails as the input's, without inviting a retry", async () => {
    const t = localStore();
    try {
      // JavaScriptCore takes seconds to overflow in JSON.stringify: one record, not a file of them.
      const deep = 100_000;
      // `name` takes any value, so the deep array reaches the writer.
      const schema = { id: "sch_any", version: "1", definition: { type: "object", properties: { id: { type: "integer" }, name: {} } } };
      const req = { ...request(t, "deep.ndjson", {}, schema), limits: { maxDepth: 10 * deep } };
      await t.store.put(req.originalKey, new TextEncoder().encode(`{"id":1,"name":${"[".repeat(deep)}${"]".repeat(deep)}}\n`));
      const outcome = await processFile(req, t.store);
      expect(outcome.ok).toBe(false);
      expect(outcome.failure).toBe("input");
      expect(outcome.internalError).toBeUndefined();
      expect(outcome.errorMessage).toContain("nested too deeply");
      expect(outcome.errorMessage).not.toMatch(/can be retried/);
      expect(await t.store.exists(req.processedKey)).toBe(false);
    } finally {
      t.close();
    }
  }, 60_000);

  test("a malformed file and a limit are the input's; the default depth limit names itself", async () => {
    const t = localStore();
    try {
      const req = request(t, "deep.json");
      await t.store.put(req.originalKey, new TextEncoder().encode(`[{"id":1,"name":${"[".repeat(5000)}${"]".repeat(5000)}}]`));
      const outcome = await processFile(req, t.store);
      expect(outcome).toMatchObject({ ok: false, failure: "input" });
      expect(outcome.errorMessage).toContain("limits.maxDepth");
    } finally {
      t.close();
    }
  });
});
