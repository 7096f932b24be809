import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEM_MAPPINGS, type PipelineFixture } from "./helpers/runs";
import { postSample } from "./helpers/sample";

/**
 * POST /pipelines/{id}/preview: a sample through the engine under the saved
 * or unsaved mappings and schema, nothing stored; the same on GraphQL and tRPC.
 */

let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;

const MAX = 64 * 1024;

beforeAll(async () => {
  h = await Harness.start({ env: { PREVIEW_MAX_BYTES: String(MAX) } });
  ws = await h.workspace();
  fx = await createPipeline(h, ws, { mappings: { ...ITEM_MAPPINGS, validations: { onInvalidRow: "quarantine" } } });
});

afterAll(async () => {
  await h.close();
});

const SAMPLE = "SKU,Qty,Name,Colour\na-1,3, Bolt ,red\nb-2,ten,Nut,blue\nc-3,7,Washer,green\n,4,Pin,red\n";

async function nothingStored(): Promise<void> {
  const runs = await h.ok(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}`);
  expect(runs.data).toEqual([]);
  const objects = await h.svc.storage.list(`${ws.workspaceId}/`);
  expect(objects.objects).toEqual([]);
}

describe("REST preview", () => {
  test("detects the format, maps the rows with their errors, counts the sample, names unused header columns; nothing stored", async () => {
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "items.csv", content: SAMPLE });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = r.body;
    expect(p.detected).toEqual({ format: "csv", encoding: "utf-8", gzip: false, delimiter: ",", headerRow: true, sheet: null, recordPath: null });
    expect(p.columns).toEqual(["SKU", "Qty", "Name", "Colour"]);
    expect(p.counts).toEqual({ total: 4, valid: 2, invalid: 2, skipped: 0, quarantined: 2 });
    expect(p.rows).toHaveLength(4);
    expect(p.rows[0]).toEqual({ inputRow: 1, valid: true, source: { SKU: "a-1", Qty: "3", Name: " Bolt ", Colour: "red" }, row: { sku: "A-1", qty: 3, name: "Bolt" }, errors: [] });
    expect(p.rows[1].valid).toBe(false);
    expect(p.rows[1].inputRow).toBe(2);
    expect(p.rows[1].errors[0].field).toBe("qty");
    expect(p.rows[3].errors).toEqual([{ field: "sku", message: "is required" }]);
    expect(p.header).toEqual({ missingColumns: [], unusedColumns: ["Colour"], message: null });
    expect(p.run).toEqual({ status: "completed", errorMessage: null });
    expect(p.truncated).toBe(false);
    expect(p.timedOut).toBe(false);
    expect(p.applied).toEqual({ mappings: "saved", schemaId: fx.schema.id });
    await nothingStored();
  });

  test("unsaved mappings and limit: a column missing from the header is named; the run would fail under 'fail'", async () => {
    const mappings = {
      fieldMappings: [
        { source: "SKU", target: "sku" },
        { source: "Quantity", target: "qty", transform: "integer" },
      ],
      validations: { onInvalidRow: "fail" },
    };
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "items.csv", content: SAMPLE }, { mappings: JSON.stringify(mappings), limit: "2" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.rows).toHaveLength(2);
    expect(r.body.counts.total).toBe(4);
    expect(r.body.header.missingColumns).toEqual(["Quantity"]);
    expect(r.body.header.message).toContain("`Quantity` not in the header; closest: `Qty`");
    // As a run would: the header check fails it before any row, whatever the rows would have done.
    expect(r.body.run.status).toBe("failed");
    expect(r.body.run.errorMessage).toContain("so no row was read");
    expect(r.body.applied).toEqual({ mappings: "given", schemaId: fx.schema.id });
    // The saved pipeline is unchanged.
    const saved = await h.ok(ws, "GET", `/pipelines/${fx.pipeline.id}`);
    expect(saved.mappings.fieldMappings[1].source).toBe("Qty");
  });

  test("another schema of the workspace, by schemaId", async () => {
    const loose = await h.ok(ws, "POST", "/schemas", { name: "Loose items", definition: { type: "object", properties: { sku: { type: "string" }, qty: {}, name: {} } } });
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "items.csv", content: SAMPLE }, { schemaId: loose.id, mappings: JSON.stringify({ fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty" }] }) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.counts).toMatchObject({ total: 4, valid: 4, invalid: 0 });
  });

  test("JSON with a record path, gzipped", async () => {
    const doc = JSON.stringify({ data: { items: [{ SKU: "x", Qty: 1, Name: "A" }, { SKU: "y", Qty: 2 }] } });
    const mappings = { ...ITEM_MAPPINGS, options: { recordPath: "data.items" } };
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "items.json.gz", content: gzipSync(doc) }, { mappings: JSON.stringify(mappings) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.detected).toMatchObject({ format: "json", gzip: true, recordPath: "data.items", delimiter: null, headerRow: null });
    expect(r.body.header).toBeNull();
    expect(r.body.rows.map((x: { row: unknown }) => x.row)).toEqual([{ sku: "X", qty: 1, name: "A" }, { sku: "Y", qty: 2 }]);
  });

  test("a file over PREVIEW_MAX_BYTES is cut there: truncated, its last (cut) record left out, the rows counted up to it", async () => {
    const line = "a-1,3,Bolt,red\n";
    const big = `SKU,Qty,Name,Colour\n${line.repeat(Math.ceil((2 * MAX) / line.length))}`;
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "big.csv", content: big });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.truncated).toBe(true);
    const whole = Math.floor((MAX - "SKU,Qty,Name,Colour\n".length) / line.length);
    expect(r.body.counts.total).toBe(whole);
    expect(r.body.counts.invalid).toBe(0);
    expect(r.body.rows).toHaveLength(100);
    // Fields before the cut file are read; the answer did not wait for the rest of the upload.
    const limited = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "big.csv", content: big }, { limit: "3" });
    expect(limited.body.rows).toHaveLength(3);
  });

  test("an unreadable sample answers the message a run would fail with", async () => {
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "items.csv", content: new Uint8Array([0, 1, 2, 0, 0, 0, 255, 0, 3]) });
    expect(r.status).toBe(200);
    expect(r.body.run.status).toBe("failed");
    expect(r.body.run.errorMessage).toBeString();
    expect(r.body.detected).toBeNull();
  });
});

describe("REST preview refuses bad input, changing nothing", () => {
  test("no file, an empty file, malformed mappings JSON, a bad limit, an unknown schema, another workspace's pipeline", async () => {
    const path = `/pipelines/${fx.pipeline.id}/preview`;
    const noFile = await postSample(h, ws, path, null, { limit: "5" });
    expect(noFile.status).toBe(400);
    expect(noFile.body.message).toContain("file:");
    const empty = await postSample(h, ws, path, { name: "e.csv", content: "" });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toContain("file:");
    const badJson = await postSample(h, ws, path, { name: "a.csv", content: SAMPLE }, { mappings: "{nope" });
    expect(badJson.status).toBe(400);
    expect(badJson.body.message).toStartWith("mappings:");
    const badMapping = await postSample(h, ws, path, { name: "a.csv", content: SAMPLE }, { mappings: JSON.stringify({ fieldMappings: [{ source: "A", target: "a", transform: "shout" }] }) });
    expect(badMapping.status).toBe(400);
    expect(badMapping.body.message).toContain("mappings.fieldMappings[0].transform");
    const badLimit = await postSample(h, ws, path, { name: "a.csv", content: SAMPLE }, { limit: "1001" });
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.message).toContain("limit: must be at most 1000");
    const noSchema = await postSample(h, ws, path, { name: "a.csv", content: SAMPLE }, { schemaId: "sch_nope" });
    expect(noSchema.status).toBe(404);
    expect(noSchema.body.message).toContain("sch_nope");
    const other = await h.workspace();
    const foreign = await postSample(h, other, path, { name: "a.csv", content: SAMPLE });
    expect(foreign.status).toBe(404);
    const json = await h.api(ws, "POST", path, { file: "x" });
    expect(json.status).toBe(415);
    await nothingStored();
  });
});

describe("GraphQL and tRPC preview", () => {
  test("the same answer from a sample given as text or base64", async () => {
    const rest = (await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "items.csv", content: SAMPLE })).body;
    const t = h.trpc(ws);
    const viaTrpc = await t.pipelines.preview({ id: fx.pipeline.id, data: { sample: { filename: "items.csv", base64: Buffer.from(SAMPLE).toString("base64") } } });
    const q = `mutation($id: ID!, $input: PreviewPipelineSampleInput!) { previewPipeline(id: $id, input: $input) {
      detected { format encoding gzip delimiter headerRow sheet recordPath } columns
      rows { inputRow valid source row errors { field message } }
      counts { total valid invalid skipped quarantined } run { status errorMessage }
      header { missingColumns unusedColumns message } applied { mappings schemaId } truncated timedOut ms } }`;
    const g = await h.graphql(ws.apiKey, q, { id: fx.pipeline.id, input: { sample: { filename: "items.csv", text: SAMPLE } } });
    expect(g.body.errors, JSON.stringify(g.body.errors)).toBeUndefined();
    const strip = (p: Record<string, unknown>) => ({ ...p, ms: 0 });
    expect(strip(viaTrpc as never)).toEqual(strip(rest));
    expect(strip(g.body.data!.previewPipeline)).toEqual(strip(rest));
    await nothingStored();
  });

  test("bad input: neither or both of text and base64, bad base64, limit too large", async () => {
    const t = h.trpc(ws);
    const refuse = async (data: unknown, text: string) => {
      const e = await t.pipelines.preview({ id: fx.pipeline.id, data: data as never }).catch((x) => x);
      expect(e.code).toBe("BAD_REQUEST");
      expect(e.message).toContain(text);
    };
    await refuse({ sample: { filename: "a.csv" } }, "sample.text: give exactly one of text or base64");
    await refuse({ sample: { filename: "a.csv", text: "a", base64: "YQ==" } }, "sample.text");
    await refuse({ sample: { filename: "a.csv", base64: "!!!" } }, "sample.base64: is not valid base64");
    await refuse({ sample: { filename: "a.csv", text: SAMPLE }, limit: 5000 }, "limit: must be at most 1000");
    const g = await h.graphql(ws.apiKey, `mutation { previewPipeline(id: "${fx.pipeline.id}", input: { sample: { filename: "a.csv" } }) { truncated } }`);
    expect(g.body.errors?.[0]?.message).toContain("sample.text");
    expect(g.body.errors?.[0]?.extensions.code).toBe("BAD_USER_INPUT");
  });
});
