import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import JSZip from "jszip";
import { expectError } from "./helpers/expect";
import { fetchLink } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, type PipelineFixture, uploadFile, waitForRun } from "./helpers/runs";

let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  fx = await createPipeline(h, ws);
});

afterAll(async () => {
  await h.close();
});

async function zip(files: Record<string, string | Uint8Array>, compression: "STORE" | "DEFLATE" = "DEFLATE"): Promise<Uint8Array> {
  const z = new JSZip();
  for (const [name, content] of Object.entries(files)) z.file(name, content, { createFolders: false });
  return z.generateAsync({ type: "uint8array", compression });
}

async function runsOf(pipelineId: string) {
  return (await h.svc.db.read.select().from(h.svc.db.t.pipelineRuns)).filter((r) => r.pipelineId === pipelineId);
}

async function processed(runId: string) {
  const link = await h.ok(ws, "GET", `/files/pipeline-runs/${runId}/processed`);
  return (await fetchLink(h, link.url)).json();
}

describe("a zip upload", () => {
  test("each member the pipeline reads becomes its own run, linked to the archive's run; the others are listed as rejected", async () => {
    const inner = await zip({ "x.csv": "SKU,Qty\nz-9,1\n" });
    const archive = await zip({
      "a.csv": "SKU,Qty,Name\na-1,3,Bolt\n",
      "deep/b.ndjson": '{"SKU":"b-2","Qty":"4","Name":"Nut"}\n',
      "c.csv.gz": Bun.gzipSync(new TextEncoder().encode("SKU,Qty,Name\nc-3,5,Washer\n")),
      "../escape.csv": "SKU,Qty\nevil,1\n",
      "/etc/cron.csv": "SKU,Qty\nevil,2\n",
      "inner.zip": inner,
      "manual.pdf": "%PDF-1.4",
    });
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "batch.zip", content: archive }, { type: "application/zip" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const top = await waitForRun(h, ws, res.body.id, "completed");
    expect(top.filename).toBe("batch.zip");
    const members = top.metadata.archive.members as { member: string; runId: string }[];
    expect(members.map((m) => m.member).sort()).toEqual(["a.csv", "c.csv.gz", "deep/b.ndjson"]);
    expect(Object.fromEntries((top.metadata.archive.rejected as { member: string; reason: string }[]).map((r) => [r.member, r.reason]))).toEqual({
      "../escape.csv": "its path is absolute or leaves the archive ('..'); not extracted",
      "/etc/cron.csv": "its path is absolute or leaves the archive ('..'); not extracted",
      "inner.zip": "an archive inside an archive is not opened (nesting is refused)",
      "manual.pdf": "not a format the pipeline reads (csv, tsv, xlsx, json, ndjson, xml, optionally .gz or .pgp)",
    });
    const want: Record<string, object> = {
      "a.csv": { sku: "A-1", qty: 3, name: "Bolt" },
      "deep/b.ndjson": { sku: "B-2", qty: 4, name: "Nut" },
      "c.csv.gz": { sku: "C-3", qty: 5, name: "Washer" },
    };
    for (const m of members) {
      const run = await waitForRun(h, ws, m.runId, ["completed", "failed"]);
      expect(run.status, run.errorMessage).toBe("completed");
      expect(run.filename).toBe(m.member.split("/").pop());
      expect(run.metadata.archive).toEqual({ runId: top.id, filename: "batch.zip", member: m.member });
      expect(await processed(m.runId)).toEqual([want[m.member]]);
    }
    // Nothing was written outside the runs' own keys.
    expect((await runsOf(fx.pipeline.id)).length).toBe(4);
  });

  test("a zip bomb is refused before inflating, with a message, and nothing is kept", async () => {
    const before = (await runsOf(fx.pipeline.id)).length;
    const bomb = await zip({ "a.csv": "SKU,Qty\na,1\n", "zeros.csv": new Uint8Array(64 * 1024 * 1024) });
    expect(bomb.length).toBeLessThan(1024 * 1024);
    expectError(await uploadFile(h, ws, fx.pipeline.id, { name: "bomb.zip", content: bomb }), 400, "invalid_input", /member 'zeros\.csv' would inflate \d+-fold .*MAX_DECOMPRESSION_RATIO = 100\): the archive looks like a zip bomb/);
    expect((await runsOf(fx.pipeline.id)).length).toBe(before);
  });

  test("too many members, too many bytes, or nothing readable: refused naming the limit", async () => {
    const before = (await runsOf(fx.pipeline.id)).length;
    const limits = h.svc.settings.archive;
    const saved = { ...limits };
    try {
      limits.maxMembers = 3;
      const many = await zip(Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`f${i}.csv`, "SKU,Qty\na,1\n"])));
      expectError(await uploadFile(h, ws, fx.pipeline.id, { name: "many.zip", content: many }), 400, "invalid_input", "file: the archive holds 4 members; at most 3 are accepted (MAX_ARCHIVE_MEMBERS)");
      limits.maxMembers = saved.maxMembers;
      limits.maxBytes = 100;
      const big = await zip({ "a.csv": `SKU,Qty\n${"a,1\n".repeat(50)}` }, "STORE");
      expectError(await uploadFile(h, ws, fx.pipeline.id, { name: "big.zip", content: big }), 400, "invalid_input", /inflate to more than 100 bytes \(MAX_DECOMPRESSED_BYTES\)/);
      limits.maxBytes = saved.maxBytes;
      const none = await zip({ "notes.docx": "x" });
      expectError(await uploadFile(h, ws, fx.pipeline.id, { name: "none.zip", content: none }), 400, "invalid_input", /the archive holds no member the pipeline reads \(notes\.docx: not a format/);
      expectError(await uploadFile(h, ws, fx.pipeline.id, { name: "broken.zip", content: "SKU,Qty\n" }), 400, "invalid_input", /file: not a readable zip archive/);
    } finally {
      Object.assign(limits, saved);
    }
    expect((await runsOf(fx.pipeline.id)).length).toBe(before);
  });
});

describe("e-mail attachments", () => {
  test("zip and OpenPGP attachments are formats a connection can allow", async () => {
    const { attachmentFormat } = await import("../src/services/run-path/doors/email/rules");
    expect(attachmentFormat("batch.zip", null).format).toBe("zip");
    expect(attachmentFormat("orders.csv.gpg", null).format).toBe("pgp");
    expect(attachmentFormat(null, "application/pgp-encrypted").format).toBe("pgp");
    const conn = await h.ok(ws, "POST", "/connections", { name: "Mail with archives", type: "EMAIL", emailAllowedFormats: ["zip", "pgp", "csv"] });
    expect(conn.emailAllowedFormats).toEqual(["zip", "pgp", "csv"]);
  });
});
