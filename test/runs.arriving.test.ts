import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fetchLink } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, type PipelineFixture, startUpload, waitForRun } from "./helpers/runs";

// POST /pipelines/{id}/runs with a file large enough (8 MiB or more) that the engine begins on it while it arrives:
// the run says so (timings.whileArriving), and its files are what the pipeline, as the run's job found it, makes.
let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  fx = await createPipeline(h, ws);
});
afterAll(() => h.close());

const ROWS = 330_000;
/** ~9.7 MB of ITEMS_CSV-shaped rows. */
function bigCsv(): string {
  const lines = ["SKU,Qty,Name"];
  for (let i = 0; i < ROWS; i++) lines.push(`sku-${i},${i % 90},  name ${i}  `);
  return `${lines.join("\n")}\n`;
}
const BIG = bigCsv();

/**
 * The upload as a client streams it: a multipart form sent in pieces, with a
 * content-length; `halfway` runs after half of the file has been sent.
 */
async function streamUpload(pipelineId: string, content: string, halfway?: () => Promise<void>) {
  const boundary = "fps-arriving";
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const file = new TextEncoder().encode(content);
  const piece = 256 * 1024;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(head));
      for (let at = 0; at < file.length; at += piece) {
        if (halfway && at >= file.length / 2 && at - piece < file.length / 2) await halfway();
        controller.enqueue(file.subarray(at, at + piece));
        await Bun.sleep(1);
      }
      controller.enqueue(new TextEncoder().encode(tail));
      controller.close();
    },
  });
  const length = head.length + file.length + tail.length;
  const res = await h.service.http.handle(
    new Request(`http://localhost/pipelines/${pipelineId}/runs`, {
      method: "POST",
      headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25", "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(length) },
      body,
    }),
  );
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string };
}

async function processedLines(runId: string): Promise<string[]> {
  const link = await h.ok(ws, "GET", `/files/pipeline-runs/${runId}/processed`);
  const text = await (await fetchLink(h, link.url)).text();
  return text.split("\n");
}

describe("a file processed while it arrives", () => {
  test("the run completes with every row, says so in its timings, and keeps the original byte for byte", async () => {
    const started = await streamUpload(fx.pipeline.id, BIG);
    const run = await waitForRun(h, ws, started.id, ["completed", "failed"], { timeoutMs: 60_000 });
    expect(run.status, JSON.stringify(run.metadata)).toBe("completed");
    expect(run.metadata.timings.whileArriving).toBe(true);
    expect(run.metadata.rows).toEqual({ total: ROWS, valid: ROWS, invalid: 0, skipped: 0, quarantined: 0 });
    const lines = await processedLines(run.id);
    expect(lines.length).toBe(ROWS + 3);
    expect(lines[1]).toBe('{"sku":"SKU-0","qty":0,"name":"name 0"},');
    expect(lines.at(-3)).toBe(`{"sku":"SKU-${ROWS - 1}","qty":${(ROWS - 1) % 90},"name":"name ${ROWS - 1}"}`);
    const original = await h.ok(ws, "GET", `/files/pipeline-runs/${run.id}/original`);
    const got = await fetchLink(h, original.url);
    expect(got.headers.get("etag")).toBe(`"${new Bun.CryptoHasher("md5").update(BIG).digest("hex")}"`);
    expect(await got.text()).toBe(BIG);
  }, 60_000);

  test("a pipeline edited while its file arrives: the run follows the pipeline as its job finds it", async () => {
    const p = await createPipeline(h, ws);
    const started = await streamUpload(p.pipeline.id, BIG, async () => {
      // Halfway through the upload, the name is upper-cased from now on.
      await h.ok(ws, "PATCH", `/pipelines/${p.pipeline.id}`, {
        mappings: { fieldMappings: [{ source: "SKU", target: "sku", transform: "uppercase" }, { source: "Qty", target: "qty", transform: "integer" }, { source: "Name", target: "name", transform: "uppercase" }] },
      });
    });
    const run = await waitForRun(h, ws, started.id, ["completed", "failed"], { timeoutMs: 60_000 });
    expect(run.status).toBe("completed");
    expect(run.metadata.timings.whileArriving).toBeUndefined();
    const lines = await processedLines(run.id);
    expect(lines[1]).toBe('{"sku":"SKU-0","qty":0,"name":"  NAME 0  "},');
  }, 60_000);

  test("a small file is read once stored, as before", async () => {
    const small = await startUpload(h, ws, fx.pipeline.id, ITEMS_CSV, "small.csv");
    const run = await waitForRun(h, ws, small.id, "completed");
    expect(run.metadata.timings.whileArriving).toBeUndefined();
    expect(run.metadata.rows.total).toBe(3);
  });
});
