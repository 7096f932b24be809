import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fetchLink, type FixturePipeline, type FixtureRun, fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, runToEnd } from "./helpers/runs";

let h: Harness;
let ws: TestWorkspace;
let p: FixturePipeline;
let orders: FixtureRun;
let later: FixtureRun;
let pending: FixtureRun;

const ORDERS = [
  { sku: "A-1", qty: 3, name: "Bolt", price: 1.5, active: true },
  { sku: "B-2", qty: 10, name: "Nut", price: 0.25, active: false },
  { sku: "C-3", qty: 7, name: "Washer", note: "bolt kit", active: true },
];
const LATER = [
  { sku: "a-1", qty: 30, name: "BOLT XL" },
  { sku: "D-4", qty: 3, name: "Screw", note: 'a "quoted" word' },
];

beforeAll(async () => {
  h = await Harness.start({ env: { FILE_LINK_TTL_SECONDS: "120" } });
  ws = await h.workspace();
  p = await fixturePipeline(h, ws, { name: "Orders in", connectionName: "Acme Warehouse" });
  orders = await fixtureRun(h, ws, p, { rows: ORDERS, filename: "orders.csv", original: "SKU,Qty\nA-1,3\n" });
  later = await fixtureRun(h, ws, p, { rows: LATER, filename: "later.csv.gz" });
  pending = await fixtureRun(h, ws, p, { rows: null, filename: "pending.csv" });
});
afterAll(() => h.close());

const search = (body: Record<string, unknown>) => h.ok(ws, "POST", "/files/search", { pipelineRunIds: [orders.id, later.id, pending.id], ...body });
const hitsOf = (res: any) => res.results.map((r: any) => [r.pipelineRunId === orders.id ? "orders" : "later", r.rowIndex, r.matchingFields]);

describe("links", () => {
  test("the original file: a presigned link that works with a plain request, no key", async () => {
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${orders.id}/original`);
    expect(Object.keys(link).sort()).toEqual(["expiresIn", "filename", "mimetype", "url"]);
    expect(link).toMatchObject({ filename: "orders.csv", mimetype: "text/csv", expiresIn: 120 });
    expect(link.url).toStartWith("http://localhost:3000/");
    const res = await fetchLink(h, link.url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(orders.original);
    expect(res.headers.get("content-disposition")).toContain('filename="orders.csv"');
  });

  test("the processed file is named after the received one (compression and extension dropped)", async () => {
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${orders.id}/processed`);
    expect(link).toMatchObject({ filename: "orders.processed.json", mimetype: "application/json", expiresIn: 120 });
    const res = await fetchLink(h, link.url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(orders.processedText!);
    expect((await h.ok(ws, "GET", `/files/pipeline-runs/${later.id}/processed`)).filename).toBe("later.processed.json");
  });

  test("an altered link is refused with 403", async () => {
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${orders.id}/processed`);
    const url = new URL(link.url);
    const altered = url.href.replace(`/runs/${orders.id}/`, `/runs/${later.id}/`);
    expect(altered).not.toBe(url.href);
    expect((await fetchLink(h, altered)).status).toBe(403);
    expect((await fetchLink(h, link.url, { method: "PUT", body: "x" })).status).toBe(403);
  });

  test("a run still processing has an original link but no processed one (409)", async () => {
    expect((await h.ok(ws, "GET", `/files/pipeline-runs/${pending.id}/original`)).filename).toBe("pending.csv");
    const res = await h.api(ws, "GET", `/files/pipeline-runs/${pending.id}/processed`);
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("has no processed file (status processing)");
  });
});

describe("search", () => {
  test("without a term every row is a hit, run by run in the order given; runs without a processed file are skipped", async () => {
    const res = await search({});
    expect(hitsOf(res)).toEqual([
      ["orders", 0, []],
      ["orders", 1, []],
      ["orders", 2, []],
      ["later", 0, []],
      ["later", 1, []],
    ]);
    expect(res.pagination).toEqual({ total: 5, offset: 0, limit: 100, returned: 5 });
    expect(res.metadata).toMatchObject({ searchTerm: null, caseSensitive: false, filesSearched: 2 });
    expect(Number.isInteger(res.metadata.searchDurationMs)).toBe(true);
    expect(res.results[0]).toEqual({
      pipelineRunId: orders.id,
      filename: "orders.csv",
      rowIndex: 0,
      inputRow: 1,
      rowData: ORDERS[0],
      matchingFields: [],
      processedAt: h.clock.now().toISOString(),
      pipelineName: "Orders in",
      clientName: "Acme Warehouse",
    });
    expect(res.results[4].rowData).toEqual(LATER[1]);
  });

  test("a term matches part of a value, ignoring case by default; matchingFields names the fields", async () => {
    const res = await search({ searchTerm: "bolt" });
    expect(hitsOf(res)).toEqual([
      ["orders", 0, ["name"]],
      ["orders", 2, ["note"]],
      ["later", 0, ["name"]],
    ]);
    expect(res.pagination.total).toBe(3);
    expect(res.metadata).toMatchObject({ searchTerm: "bolt", caseSensitive: false, filesSearched: 2 });
  });

  test("caseSensitive, exactMatch and both", async () => {
    expect(hitsOf(await search({ searchTerm: "Bolt", caseSensitive: true }))).toEqual([["orders", 0, ["name"]]]);
    expect(hitsOf(await search({ searchTerm: "bolt", exactMatch: true }))).toEqual([["orders", 0, ["name"]]]);
    expect(hitsOf(await search({ searchTerm: "bolt", exactMatch: true, caseSensitive: true }))).toEqual([]);
    expect((await search({ searchTerm: "Bolt", caseSensitive: true })).metadata.caseSensitive).toBe(true);
  });

  test("fieldName restricts the search to one field", async () => {
    expect(hitsOf(await search({ searchTerm: "bolt", fieldName: "name" }))).toEqual([
      ["orders", 0, ["name"]],
      ["later", 0, ["name"]],
    ]);
    expect(hitsOf(await search({ searchTerm: "bolt", fieldName: "note" }))).toEqual([["orders", 2, ["note"]]]);
    expect(hitsOf(await search({ searchTerm: "bolt", fieldName: "nope" }))).toEqual([]);
  });

  test("numbers and booleans match on their text", async () => {
    expect(hitsOf(await search({ searchTerm: "3" }))).toEqual([
      ["orders", 0, ["qty"]],
      ["orders", 2, ["sku"]],
      ["later", 0, ["qty"]],
      ["later", 1, ["qty"]],
    ]);
    expect(hitsOf(await search({ searchTerm: "3", exactMatch: true }))).toEqual([
      ["orders", 0, ["qty"]],
      ["later", 1, ["qty"]],
    ]);
    expect(hitsOf(await search({ searchTerm: "0.25" }))).toEqual([["orders", 1, ["price"]]]);
    expect(hitsOf(await search({ searchTerm: "TRUE", exactMatch: true }))).toEqual([
      ["orders", 0, ["active"]],
      ["orders", 2, ["active"]],
    ]);
  });

  test("field names are not values, and terms with quotes are found", async () => {
    expect((await search({ searchTerm: "sku" })).pagination.total).toBe(0);
    expect(hitsOf(await search({ searchTerm: '"quoted"' }))).toEqual([["later", 1, ["note"]]]);
  });

  test("offset and limit page over all hits across files; total counts them all", async () => {
    const res = await search({ offset: 2, limit: 2 });
    expect(hitsOf(res)).toEqual([
      ["orders", 2, []],
      ["later", 0, []],
    ]);
    expect(res.pagination).toEqual({ total: 5, offset: 2, limit: 2, returned: 2 });
    const beyond = await search({ offset: 10, limit: 5 });
    expect(beyond.results).toEqual([]);
    expect(beyond.pagination).toEqual({ total: 5, offset: 10, limit: 5, returned: 0 });
    const termPage = await search({ searchTerm: "3", offset: 1, limit: 2 });
    expect(hitsOf(termPage)).toEqual([
      ["orders", 2, ["sku"]],
      ["later", 0, ["qty"]],
    ]);
    expect(termPage.pagination.total).toBe(4);
  });

  test("a run listed twice is searched once; an empty processed file has no hits but is searched", async () => {
    const empty = await fixtureRun(h, ws, p, { rows: [], filename: "empty.csv" });
    const res = await h.ok(ws, "POST", "/files/search", { pipelineRunIds: [later.id, later.id, empty.id] });
    expect(res.pagination.total).toBe(2);
    expect(res.metadata.filesSearched).toBe(2);
  });
});

describe("GET /files/json", () => {
  const get = (qs: string) => h.request("GET", `/files/json?${qs}`, { key: ws.apiKey, version: "2026-05-25" });

  test("by pipelineRunId: the processed file as stored, with its name and run", async () => {
    const res = await get(`pipelineRunId=${orders.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("x-pipeline-run-id")).toBe(orders.id);
    expect(res.headers.get("content-disposition")).toContain('inline; filename="orders.processed.json"');
    expect(res.headers.get("service-version")).toBe("2026-05-25");
    expect(res.body).toEqual(ORDERS);
    const raw = await h.service.http.handle(
      new Request(`http://localhost/files/json?pipelineRunId=${orders.id}`, { headers: { "x-api-key": ws.apiKey } }),
    );
    expect(await raw.text()).toBe(orders.processedText!);
  });

  test("by name: the processed name or the received one, the newest processed run of that name", async () => {
    expect((await get("filename=later.processed.json")).body).toEqual(LATER);
    expect((await get("filename=later.csv.gz")).body).toEqual(LATER);
    const older = await fixtureRun(h, ws, p, { rows: [{ day: 1 }], filename: "daily.csv", processedAt: new Date(h.clock.now().getTime() - 3600_000) });
    const newer = await fixtureRun(h, ws, p, { rows: [{ day: 2 }], filename: "daily.csv" });
    const res = await get("filename=daily.processed.json");
    expect(res.body).toEqual([{ day: 2 }]);
    expect(res.headers.get("x-pipeline-run-id")).toBe(newer.id);
    expect((await get(`pipelineRunId=${older.id}&filename=daily.processed.json`)).body).toEqual([{ day: 1 }]);
  });

  test("offset and limit return those rows, still a JSON array", async () => {
    expect((await get(`pipelineRunId=${orders.id}&offset=1&limit=1`)).body).toEqual([ORDERS[1]]);
    expect((await get(`pipelineRunId=${orders.id}&offset=1`)).body).toEqual(ORDERS.slice(1));
    expect((await get(`pipelineRunId=${orders.id}&limit=2`)).body).toEqual(ORDERS.slice(0, 2));
    expect((await get(`pipelineRunId=${orders.id}&offset=3`)).body).toEqual([]);
  });

  test("a run without a processed file is a 409", async () => {
    const res = await get(`pipelineRunId=${pending.id}`);
    expect(res.status).toBe(409);
    expect(res.body.message).toContain(`pipelineRunId: pipeline run '${pending.id}' has no processed file`);
  });

  test("the OpenAPI document lists the query parameters", async () => {
    const doc = (await h.request("GET", "/openapi.json")).body;
    const op = doc.paths["/files/json"].get;
    const names = op.parameters.map((x: any) => x.name ?? x.$ref);
    expect(names).toEqual(expect.arrayContaining(["pipelineRunId", "filename", "offset", "limit"]));
    expect(doc.paths["/files/search"].post.requestBody).toBeDefined();
    expect(doc.paths["/pipeline-runs/delta"].get.parameters.map((x: any) => x.name)).toEqual(
      expect.arrayContaining(["baseRunId", "compareRunId", "page", "limit"]),
    );
  });
});

describe("a run that went through upload and processing", () => {
  test("its processed file is searchable, linkable and fetchable", async () => {
    const real = await createPipeline(h, ws);
    const run = await runToEnd(h, ws, real.pipeline.id, ITEMS_CSV, "items.csv");
    expect(run.status).toBe("completed");
    const res = await h.ok(ws, "POST", "/files/search", { pipelineRunIds: [run.id], searchTerm: "nut" });
    expect(res.results.map((r: any) => [r.rowIndex, r.rowData, r.matchingFields])).toEqual([[1, { sku: "B-2", qty: 10, name: "Nut" }, ["name"]]]);
    expect(res.results[0]).toMatchObject({ filename: "items.csv", pipelineName: real.pipeline.name, clientName: real.connection.name });
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${run.id}/processed`);
    expect(link.filename).toBe("items.processed.json");
    const file = await fetchLink(h, link.url);
    expect(await file.json()).toEqual([
      { sku: "A-1", qty: 3, name: "Bolt" },
      { sku: "B-2", qty: 10, name: "Nut" },
      { sku: "C-3", qty: 7, name: "Washer" },
    ]);
    expect((await h.api(ws, "GET", `/files/json?pipelineRunId=${run.id}&offset=2`)).body).toEqual([{ sku: "C-3", qty: 7, name: "Washer" }]);
  });
});
