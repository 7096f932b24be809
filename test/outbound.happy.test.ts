import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { complete, keysUnder, outboundPipeline, putPart, readSpaceFile, startUpload, uploadAll } from "./helpers/outbound";
import { waitForRun } from "./helpers/runs";
import type { PipelineFixture } from "./helpers/runs";

/**
 * Outbound uploads end to end over REST, GraphQL and tRPC: parts in, one
 * combined file, a run that maps and validates it, and the processed file
 * delivered into the hosted connection's outbound folder, compared byte for
 * byte with the expected files under test/fixtures/outbound/.
 */
let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;

const FIXTURES = join(import.meta.dir, "fixtures", "outbound");
const expected = (name: string) => new Uint8Array(readFileSync(join(FIXTURES, name)));

/** Four parts; part 2 is empty. Sent out of order, part 1 first in a wrong version that is then replaced. */
const PART_1 = [
  { SKU: "a-1", Qty: "3", Name: " Bolt " },
  { SKU: "b-2", Qty: 10, Name: "Nut, hex" },
];
const PART_3 = [{ SKU: "c-3", Qty: "7", Name: 'Washer "flat" <M8> & co' }];
const PART_4 = [{ SKU: "d-4", Qty: "1", Name: "Schraube ä" }];

async function sendItems(uploadId: string) {
  expect((await putPart(h, ws, uploadId, 4, PART_4)).status).toBe(200);
  expect((await putPart(h, ws, uploadId, 1, [{ SKU: "wrong", Qty: "0", Name: "replaced" }])).status).toBe(200);
  expect((await putPart(h, ws, uploadId, 3, PART_3)).status).toBe(200);
  expect((await putPart(h, ws, uploadId, 2, [])).status).toBe(200);
  const again = await putPart(h, ws, uploadId, 1, PART_1);
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({ uploadId, partNumber: 1, rowCount: 2, totalParts: 4, partsReceived: 4 });
}

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  fx = await outboundPipeline(h, ws, { connectionName: "Acme Hosted", name: "Items out" });
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

describe("a hosted connection receives the processed file in its outbound folder, byte for byte", () => {
  test.each([
    ["csv", "items.csv"],
    ["json", "items.json"],
    ["xml", "items.xml"],
  ] as const)("%s", async (format, fixture) => {
    const outputFilename = `items-${format}-export`;
    const created = await startUpload(h, ws, { connectionName: "Acme Hosted", pipelineName: "Items out", totalParts: 4, outputFilename, outputFormat: format });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const uploadId = created.body.uploadId;
    expect(uploadId).toMatch(/^upl_/);
    expect(created.body).toMatchObject({ status: "initiated", totalParts: 4, filename: `upload-${uploadId}.json`, outputFilename: `${outputFilename}.${format}`, outputFormat: format });

    await sendItems(uploadId);
    const status = await h.ok(ws, "GET", `/outbound/uploads/${uploadId}`);
    expect(status).toMatchObject({ uploadId, status: "initiated", connectionName: "Acme Hosted", pipelineName: "Items out", partsReceived: 4, runId: null });
    expect(status.parts.map((p: any) => [p.partNumber, p.rowCount])).toEqual([
      [1, 2],
      [2, 0],
      [3, 1],
      [4, 1],
    ]);

    const done = await complete(h, ws, uploadId, [3, 1, 4, 2]);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ filename: `upload-${uploadId}.json`, uploadId, status: "completed", outputFilename: `${outputFilename}.${format}` });
    expect(done.body.message).toContain("4 parts combined");
    const run = await waitForRun(h, ws, done.body.runId, ["delivered", "failed"]);
    expect(run.errorMessage).toBeUndefined();
    expect(run.status).toBe("delivered");
    expect(run.metadata.rows).toMatchObject({ total: 4, valid: 4, invalid: 0 });
    expect(run.metadata.arrival).toEqual({ uploadId, outputFormat: format, outputFilename: `${outputFilename}.${format}`, parts: 4, rows: 4 });
    expect(run.metadata.delivery).toMatchObject({ kind: "hosted", connectionId: fx.connection.id, filename: `${outputFilename}.${format}`, path: `/outbound/${outputFilename}.${format}`, format });

    const delivered = await readSpaceFile(h, ws, fx.connection.id, `outbound/${outputFilename}.${format}`);
    expect(delivered).not.toBeNull();
    expect(new TextDecoder().decode(delivered!)).toBe(new TextDecoder().decode(expected(fixture)));
    expect(Buffer.compare(Buffer.from(delivered!), Buffer.from(expected(fixture)))).toBe(0);

    // The combined original is one JSON array of the rows in part order (the empty part adds nothing).
    const original = await h.ok(ws, "GET", `/files/pipeline-runs/${run.id}/original`);
    const combined = await (await h.service.http.handle(new Request(original.url))).text();
    expect(JSON.parse(combined)).toEqual([...PART_1, ...PART_3, ...PART_4]);
    expect(combined).toBe(`[\n${[...PART_1, ...PART_3, ...PART_4].map((r) => JSON.stringify(r)).join(",\n")}\n]\n`);

    // The parts' objects are gone once the run has its file; the session says what was combined and which run it started.
    expect(await keysUnder(h, `ws/${ws.workspaceId}/outbound-uploads/${uploadId}/`)).toEqual([]);
    const after = await h.ok(ws, "GET", `/outbound/uploads/${uploadId}`);
    expect(after).toMatchObject({ status: "completed", runId: run.id, partsReceived: 4, errorMessage: null });
    expect(typeof after.endedAt).toBe("string");
  });
});

describe("names and formats", () => {
  const create = async (body: Record<string, unknown>) => {
    const r = await startUpload(h, ws, { connectionName: "Acme Hosted", pipelineName: "Items out", totalParts: 1, ...body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };

  test("outputFormat is inferred from outputFilename's extension, else the pipeline's option, else json; outputFormat overrides format", async () => {
    expect(await create({ outputFilename: "orders.XML" })).toMatchObject({ outputFilename: "orders.XML", outputFormat: "xml" });
    expect(await create({ outputFilename: "orders" })).toMatchObject({ outputFilename: "orders.json", outputFormat: "json" });
    expect(await create({ outputFilename: "orders.txt" })).toMatchObject({ outputFilename: "orders.txt", outputFormat: "json" });
    expect(await create({ outputFilename: "orders", format: "csv" })).toMatchObject({ outputFilename: "orders.csv", outputFormat: "csv" });
    expect(await create({ format: "xml", outputFormat: "csv" })).toMatchObject({ outputFormat: "csv" });
    expect(await create({ outputFilename: "orders.csv", outputFormat: "xml" })).toMatchObject({ outputFilename: "orders.csv", outputFormat: "xml" });
    const withOption = await outboundPipeline(h, ws, {
      connectionId: fx.connection.id,
      name: "Items out csv",
      mappings: { fieldMappings: [{ source: "SKU", target: "sku" }], options: { outputFormat: "csv" } },
    });
    const r = await startUpload(h, ws, { connectionName: "Acme Hosted", pipelineName: withOption.pipeline.name, totalParts: 1 });
    expect(r.body).toMatchObject({ outputFormat: "csv", outputFilename: `upload-${r.body.uploadId}.csv` });
  });

  test("without outputFilename the file is delivered as filename with the format's extension, in the requested format", async () => {
    const created = await create({ filename: "nightly.json", outputFormat: "csv" });
    expect(created).toMatchObject({ filename: "nightly.json", outputFilename: "nightly.csv", outputFormat: "csv" });
    const done = await uploadAll(h, ws, created.uploadId, [[{ SKU: "x-1", Qty: "2", Name: "Pin" }]]);
    expect(done.filename).toBe("nightly.json");
    const run = await waitForRun(h, ws, done.runId, ["delivered", "failed"]);
    expect(run).toMatchObject({ status: "delivered", filename: "nightly.json" });
    const file = await readSpaceFile(h, ws, fx.connection.id, "outbound/nightly.csv");
    expect(new TextDecoder().decode(file!)).toBe("sku,qty,name\r\nX-1,2,Pin\r\n");
  });

  test("a filename with another extension is still read as the JSON it is; a second delivery under the same name replaces the first", async () => {
    for (const name of ["Pin", "Peg"]) {
      const created = await create({ filename: "rows.csv", outputFilename: "latest.json" });
      const done = await uploadAll(h, ws, created.uploadId, [[{ SKU: "y-1", Qty: "5", Name: name }]]);
      expect((await waitForRun(h, ws, done.runId, ["delivered", "failed"])).status).toBe("delivered");
    }
    const file = await readSpaceFile(h, ws, fx.connection.id, "outbound/latest.json");
    expect(new TextDecoder().decode(file!)).toBe('[\n{"sku":"Y-1","qty":5,"name":"Peg"}\n]\n');
  });

  test("the deprecated clientName names the connection, any case, and pipeline names match any case", async () => {
    const r = await startUpload(h, ws, { clientName: "acme HOSTED", pipelineName: "ITEMS OUT", totalParts: 2 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await h.ok(ws, "GET", `/outbound/uploads/${r.body.uploadId}`)).toMatchObject({ connectionName: "Acme Hosted", pipelineName: "Items out" });
    const both = await startUpload(h, ws, { connectionName: "Acme Hosted", clientName: "acme hosted", pipelineName: "Items out", totalParts: 1 });
    expect(both.status).toBe(200);
  });

  test("the status shows the connection's current name", async () => {
    const other = await outboundPipeline(h, ws, { connectionName: "Renamed Later", name: "Renamed out" });
    const r = await startUpload(h, ws, { connectionName: "Renamed Later", pipelineName: "Renamed out", totalParts: 1 });
    await h.ok(ws, "PATCH", `/connections/${other.connection.id}`, { name: "Renamed Now" });
    expect((await h.ok(ws, "GET", `/outbound/uploads/${r.body.uploadId}`)).connectionName).toBe("Renamed Now");
  });

  test("the legacy version 2024-09-01 serves the same routes, outputFilename and outputFormat included", async () => {
    const r = await startUpload(h, ws, { clientName: "Acme Hosted", pipelineName: "Items out", totalParts: 1, outputFilename: "legacy", outputFormat: "xml" }, "2024-09-01");
    expect(r.status).toBe(200);
    expect(r.headers.get("service-version")).toBe("2024-09-01");
    expect(r.body).toMatchObject({ status: "initiated", outputFilename: "legacy.xml", outputFormat: "xml" });
  });
});

describe("completing", () => {
  const newUpload = async (totalParts = 1) =>
    (await startUpload(h, ws, { connectionName: "Acme Hosted", pipelineName: "Items out", totalParts })).body.uploadId as string;
  const runsOfPipeline = async () => (await h.ok(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}?limit=100`)).pagination.total as number;

  test("completing twice starts one run and answers it twice", async () => {
    const id = await newUpload();
    const before = await runsOfPipeline();
    const first = await uploadAll(h, ws, id, [[{ SKU: "t-1", Qty: "1" }]]);
    const second = await complete(h, ws, id, [1]);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first);
    expect(await runsOfPipeline()).toBe(before + 1);
    await waitForRun(h, ws, first.runId, ["delivered", "failed"]);
  });

  test("two completes at once start one run, and both answer it", async () => {
    const id = await newUpload(2);
    expect((await putPart(h, ws, id, 1, [{ SKU: "c-1", Qty: "1" }])).status).toBe(200);
    expect((await putPart(h, ws, id, 2, [{ SKU: "c-2", Qty: "2" }])).status).toBe(200);
    const before = await runsOfPipeline();
    const answers = await Promise.all([1, 2, 3].map(() => complete(h, ws, id, [1, 2])));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(new Set(answers.map((a) => a.body.runId)).size).toBe(1);
    expect(await runsOfPipeline()).toBe(before + 1);
    const run = await waitForRun(h, ws, answers[0]!.body.runId, ["delivered", "failed"]);
    expect(run.status).toBe("delivered");
    // Only the run's own original is left: the losers' stored copies were removed.
    const runKeys = await keysUnder(h, `ws/${ws.workspaceId}/runs/`);
    const originals = runKeys.filter((k) => k.endsWith(`/original/upload-${id}.json`));
    expect(originals).toEqual([`ws/${ws.workspaceId}/runs/${run.id}/original/upload-${id}.json`]);
  });

  test("parts may list an etag: the part's current one is accepted, quoted or not", async () => {
    const id = await newUpload(1);
    const put = await putPart(h, ws, id, 1, [{ SKU: "e-1", Qty: "1" }]);
    const done = await complete(h, ws, id, { parts: [{ partNumber: 1, etag: `"${put.body.etag}"` }] });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await waitForRun(h, ws, done.body.runId, ["delivered", "failed"]);
  });
});

describe("GraphQL and tRPC", () => {
  test("GraphQL: create, parts, status, complete; the file is delivered", async () => {
    const c = await h.graphql(
      ws.apiKey,
      "mutation($i: CreateOutboundUploadInput!) { createOutboundUpload(input: $i) { uploadId status totalParts filename outputFilename outputFormat } }",
      { i: { connectionName: "Acme Hosted", pipelineName: "Items out", totalParts: 2, outputFilename: "graphql-out", outputFormat: "csv" } },
    );
    expect(c.body.errors).toBeUndefined();
    const up = c.body.data.createOutboundUpload;
    expect(up).toMatchObject({ status: "initiated", totalParts: 2, outputFilename: "graphql-out.csv", outputFormat: "csv" });
    const put = "mutation($id: ID!, $n: Int!, $rows: JSON!) { putOutboundUploadPart(uploadId: $id, partNumber: $n, rows: $rows) { partNumber rowCount partsReceived } }";
    const p2 = await h.graphql(ws.apiKey, put, { id: up.uploadId, n: 2, rows: [{ SKU: "g-2", Qty: "2", Name: "Two" }] });
    expect(p2.body.data.putOutboundUploadPart).toEqual({ partNumber: 2, rowCount: 1, partsReceived: 1 });
    await h.graphql(ws.apiKey, put, { id: up.uploadId, n: 1, rows: [{ SKU: "g-1", Qty: "1", Name: "One" }] });
    const s = await h.graphql(ws.apiKey, "query($id: ID!) { outboundUpload(uploadId: $id) { status partsReceived connectionName parts { partNumber } } }", { id: up.uploadId });
    expect(s.body.data.outboundUpload).toEqual({ status: "initiated", partsReceived: 2, connectionName: "Acme Hosted", parts: [{ partNumber: 1 }, { partNumber: 2 }] });
    const done = await h.graphql(
      ws.apiKey,
      "mutation($id: ID!, $i: CompleteOutboundUploadInput!) { completeOutboundUpload(uploadId: $id, input: $i) { message filename runId status } }",
      { id: up.uploadId, i: { parts: [{ partNumber: 1 }, { partNumber: 2 }] } },
    );
    expect(done.body.errors).toBeUndefined();
    const run = await waitForRun(h, ws, done.body.data.completeOutboundUpload.runId, ["delivered", "failed"]);
    expect(run.status).toBe("delivered");
    const file = await readSpaceFile(h, ws, fx.connection.id, "outbound/graphql-out.csv");
    expect(new TextDecoder().decode(file!)).toBe("sku,qty,name\r\nG-1,1,One\r\nG-2,2,Two\r\n");
  });

  test("tRPC: create, parts, status, complete; the file is delivered", async () => {
    const t = h.trpc(ws);
    const up = await t.outbound.create({ connectionName: "Acme Hosted", pipelineName: "Items out", totalParts: 1, outputFilename: "trpc-out.xml" });
    expect(up).toMatchObject({ status: "initiated", outputFormat: "xml", outputFilename: "trpc-out.xml" });
    expect(await t.outbound.putPart({ uploadId: up.uploadId, partNumber: 1, rows: [{ SKU: "r-1", Qty: "4", Name: "Rivet" }] })).toMatchObject({ partNumber: 1, rowCount: 1 });
    expect(await t.outbound.get({ uploadId: up.uploadId })).toMatchObject({ status: "initiated", partsReceived: 1, connectionName: "Acme Hosted" });
    const done = await t.outbound.complete({ uploadId: up.uploadId, parts: [{ partNumber: 1 }] });
    expect(done).toMatchObject({ status: "completed", filename: up.filename });
    expect(await t.outbound.complete({ uploadId: up.uploadId, parts: [{ partNumber: 1 }] })).toEqual(done);
    expect((await waitForRun(h, ws, done.runId, ["delivered", "failed"])).status).toBe("delivered");
    const file = await readSpaceFile(h, ws, fx.connection.id, "outbound/trpc-out.xml");
    expect(new TextDecoder().decode(file!)).toBe('<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n<row><sku>R-1</sku><qty>4</qty><name>Rivet</name></row>\n</rows>\n');
  });
});
