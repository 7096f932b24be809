import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectError } from "./helpers/expect";
import { type FixturePipeline, type FixtureRun, fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";

let h: Harness;
let ws: TestWorkspace;
let p: FixturePipeline;
let done: FixtureRun;
let done2: FixtureRun;
let other: FixtureRun;
let pending: FixtureRun;
let csvOut: FixtureRun;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  p = await fixturePipeline(h, ws);
  const q = await fixturePipeline(h, ws);
  done = await fixtureRun(h, ws, p, { rows: [{ a: 1 }] });
  done2 = await fixtureRun(h, ws, p, { rows: [{ a: 2 }] });
  other = await fixtureRun(h, ws, q, { rows: [{ a: 1 }] });
  pending = await fixtureRun(h, ws, p, { rows: null });
  csvOut = await fixtureRun(h, ws, p, { rows: [{ a: 1 }], processedExtension: "csv", processedText: "a\n1\n" });
});
afterAll(() => h.close());

const search = (body: unknown) => h.api(ws, "POST", "/files/search", body);

describe("POST /files/search: bad input is a 400 naming the field", () => {
  test.each([
    [{}, "pipelineRunIds: is required"],
    [{ pipelineRunIds: [] }, "pipelineRunIds: must list at least one pipeline run"],
    [{ pipelineRunIds: "run_1" }, "pipelineRunIds: must be an array of pipeline run ids"],
    [{ pipelineRunIds: Array.from({ length: 101 }, (_, i) => `run_${i}`) }, "pipelineRunIds: must list at most 100 pipeline runs"],
    [{ pipelineRunIds: [""] }, "pipelineRunIds[0]: must not be empty"],
    [{ pipelineRunIds: ["run_1"], limit: 1001 }, "limit: must be at most 1000"],
    [{ pipelineRunIds: ["run_1"], limit: 0 }, "limit: must be at least 1"],
    [{ pipelineRunIds: ["run_1"], offset: -1 }, "offset: must be at least 0"],
    [{ pipelineRunIds: ["run_1"], offset: 1.5 }, "offset: must be a whole number"],
    [{ pipelineRunIds: ["run_1"], searchTerm: 5 }, "searchTerm: must be a string"],
    [{ pipelineRunIds: ["run_1"], exactMatch: "yes" }, "exactMatch: must be true or false"],
    [{ pipelineRunIds: ["run_1"], caseSensitive: 1 }, "caseSensitive: must be true or false"],
    [{ pipelineRunIds: ["run_1"], fieldName: "" }, "fieldName: must not be empty"],
    [{ pipelineRunIds: ["run_1"], serchTerm: "x" }, "serchTerm: unknown member"],
  ])("%j", async (body, message) => {
    expectError(await search(body), 400, "invalid_input", message);
  });

  test("an unknown run is a 404 naming its place in the list", async () => {
    expectError(await search({ pipelineRunIds: [done.id, "run_nope"] }), 404, "not_found", "pipelineRunIds[1]: pipeline run 'run_nope' not found");
  });

  test("a run whose processed file is not JSON is skipped, not an error", async () => {
    const res = await h.ok(ws, "POST", "/files/search", { pipelineRunIds: [csvOut.id, pending.id, done.id] });
    expect(res.metadata.filesSearched).toBe(1);
    expect(res.pagination.total).toBe(1);
  });
});

describe("links", () => {
  test("an unknown run is a 404; a run without a processed file is a 409", async () => {
    expectError(await h.api(ws, "GET", "/files/pipeline-runs/run_nope/original"), 404, "not_found", "pipeline run 'run_nope' not found");
    expectError(await h.api(ws, "GET", `/files/pipeline-runs/${pending.id}/processed`), 409, "conflict", "has no processed file (status processing)");
    expectError(await h.api(ws, "GET", `/files/pipeline-runs/${done.id}/rejects`), 404, "not_found");
  });

  test("a CSV processed file is linked with its own name and type", async () => {
    expect(await h.ok(ws, "GET", `/files/pipeline-runs/${csvOut.id}/processed`)).toMatchObject({ filename: "orders.processed.csv", mimetype: "text/csv" });
  });
});

describe("GET /files/json", () => {
  test.each([
    ["", "pipelineRunId: is required (or filename)"],
    ["pipelineRunId=", "pipelineRunId: must not be empty"],
    ["pipelineRunId=run_1&offset=-1", "offset: must be at least 0"],
    ["pipelineRunId=run_1&limit=abc", "limit: must be a whole number"],
    ["pipelineRunId=run_1&limit=0", "limit: must be at least 1"],
  ])("?%s is a 400", async (qs, message) => {
    expectError(await h.api(ws, "GET", `/files/json?${qs}`), 400, "invalid_input", message);
  });

  test("unknown run or name is a 404; no processed JSON file is a 409", async () => {
    expectError(await h.api(ws, "GET", "/files/json?pipelineRunId=run_nope"), 404, "not_found", "pipelineRunId: pipeline run 'run_nope' not found");
    expectError(await h.api(ws, "GET", "/files/json?filename=nope.processed.json"), 404, "not_found", "filename: no processed file named 'nope.processed.json'");
    expectError(await h.api(ws, "GET", `/files/json?pipelineRunId=${done.id}&filename=other.json`), 404, "not_found", "filename:");
    expectError(await h.api(ws, "GET", `/files/json?pipelineRunId=${pending.id}`), 409, "conflict");
    expectError(await h.api(ws, "GET", `/files/json?pipelineRunId=${csvOut.id}`), 409, "conflict", "has no processed JSON file");
  });
});

describe("GET /pipeline-runs/delta", () => {
  const delta = (qs: string) => h.api(ws, "GET", `/pipeline-runs/delta?${qs}`);

  test("runs of different pipelines are a 400 that says so", async () => {
    expectError(
      await delta(`baseRunId=${done.id}&compareRunId=${other.id}`),
      400,
      "invalid_input",
      /^compareRunId: pipeline run '.*' is of pipeline '.*', not of the base run's pipeline '.*'; a delta compares two runs of the same pipeline$/,
    );
  });

  test.each([
    ["", "baseRunId: is required"],
    ["baseRunId=run_1", "compareRunId: is required"],
    ["baseRunId=run_1&compareRunId=run_2&limit=101", "limit: must be at most 100"],
    ["baseRunId=run_1&compareRunId=run_2&page=0", "page: must be at least 1"],
  ])("?%s is a 400", async (qs, message) => {
    expectError(await delta(qs), 400, "invalid_input", message);
  });

  test("an unknown run is a 404 naming the parameter; one without a processed JSON file a 409", async () => {
    expectError(await delta(`baseRunId=run_nope&compareRunId=${done.id}`), 404, "not_found", "baseRunId: pipeline run 'run_nope' not found");
    expectError(await delta(`baseRunId=${done.id}&compareRunId=run_nope`), 404, "not_found", "compareRunId: pipeline run 'run_nope' not found");
    expectError(await delta(`baseRunId=${done.id}&compareRunId=${pending.id}`), 409, "conflict", `compareRunId: pipeline run '${pending.id}' has no processed file`);
    expectError(await delta(`baseRunId=${csvOut.id}&compareRunId=${done2.id}`), 409, "conflict", "baseRunId:");
  });
});
