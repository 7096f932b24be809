import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fetchLink, type FixturePipeline, type FixtureRun, fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, runToEnd } from "./helpers/runs";

/**
 * Runs, files and delta over GraphQL: each answer equals REST's (2026-05-25)
 * for the same call, errors carry REST's message, and another workspace's
 * ids are NOT_FOUND.
 */

// biome-ignore lint/suspicious/noExplicitAny: results are compared whole
type Any = any;

const RUN = `id filename status createdAt updatedAt clientId path size mimetype metadata pipelineDirection errorMessage processedAt
  schemaId pipelineVersion reprocessOf pipelineId pipelineName isPipelineDeleted client { name }`;
const PAGE = "pagination { page limit total totalPages }";

let h: Harness;
let ws: TestWorkspace;
let intruder: TestWorkspace;
let processed: Any;
let pipelineId = "";
let fp: FixturePipeline;
let base: FixtureRun;
let compare: FixtureRun;
let failed: FixtureRun;
let unprocessed: FixtureRun;
let intruderRun: FixtureRun;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Owner" });
  intruder = await h.workspace({ name: "Intruder" });
  const p = await createPipeline(h, ws, { connectionName: "Acme Warehouse" });
  pipelineId = p.pipeline.id;
  // A real upload, processed by the engine.
  processed = await runToEnd(h, ws, pipelineId);
  expect(processed.status).toBe("completed");
  fp = await fixturePipeline(h, ws, { name: "Fixture rows" });
  base = await fixtureRun(h, ws, fp, { rows: [{ sku: "A-1", qty: 3 }, { sku: "B-2", qty: 5 }], filename: "base.csv" });
  compare = await fixtureRun(h, ws, fp, { rows: [{ sku: "A-1", qty: 3 }, { sku: "C-3", qty: 1 }], filename: "compare.csv" });
  failed = await fixtureRun(h, ws, fp, { rows: null, status: "failed", filename: "broken.csv" });
  // No job ever picks this one up: it stays without a processed file.
  unprocessed = await fixtureRun(h, ws, fp, { rows: null, status: "acknowledged", filename: "waiting.csv" });
  intruderRun = await fixtureRun(h, intruder, await fixturePipeline(h, intruder), { rows: [{ sku: "Z" }] });
});

afterAll(async () => {
  await h.close();
});

async function gql(query: string, variables?: Record<string, unknown>, w: TestWorkspace = ws): Promise<Any> {
  const r = await h.graphql(w.apiKey, query, variables);
  expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
  expect(r.status).toBe(200);
  return r.body.data;
}

/** The one error of a refused root field, next to REST's reply to the same call. */
async function refused(query: string, variables: Record<string, unknown>, restCall: [string, string, unknown?], w: TestWorkspace = ws) {
  const g = await h.graphql(w.apiKey, query, variables);
  const rest = await h.api(w, restCall[0], restCall[1], restCall[2]);
  expect(g.body.errors, JSON.stringify(g.body)).toHaveLength(1);
  const error = g.body.errors![0]!;
  expect(error.message).toBe(rest.body.message);
  expect(error.extensions.statusCode).toBe(rest.status);
  return error;
}

/** GraphQL's null stands for a member REST leaves out. */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== null)
        .map(([k, x]) => [k, withoutNulls(x)]),
    );
  }
  return v;
}
const same = (fromGraphql: unknown, fromRest: unknown) => expect(withoutNulls(fromGraphql)).toEqual(withoutNulls(fromRest) as object);

describe("runs", () => {
  test("run answers what GET /pipeline-runs/{id} answers", async () => {
    const { run } = await gql(`query($id: ID!) { run(id: $id) { ${RUN} } }`, { id: processed.id });
    same(run, await h.ok(ws, "GET", `/pipeline-runs/${processed.id}`));
    expect(run.metadata.rows).toMatchObject({ total: 3, valid: 3 });
  });

  test("runs and pipelineRuns answer REST's pages, filters included", async () => {
    const all = await gql(`{ runs(limit: 2) { data { ${RUN} } ${PAGE} } }`);
    same(all.runs, await h.ok(ws, "GET", "/pipeline-runs?limit=2"));
    expect(all.runs.pagination.total).toBe(5);

    const filtered = await gql(`query($s: PipelineRunStatus) { runs(status: $s, pipelineId: "${fp.id}") { data { id } ${PAGE} } }`, { s: "failed" });
    expect(filtered.runs.data.map((r: Any) => r.id)).toEqual([failed.id]);
    same(filtered.runs.pagination, (await h.ok(ws, "GET", `/pipeline-runs?status=failed&pipelineId=${fp.id}`)).pagination);

    const byPipeline = await gql(`query($p: ID!) { pipelineRuns(pipelineId: $p, connectionName: "acme", from: "2020-01-01") { data { ${RUN} } ${PAGE} } }`, {
      p: pipelineId,
    });
    same(byPipeline.pipelineRuns, await h.ok(ws, "GET", `/pipeline-runs/pipeline/${pipelineId}?connectionName=acme&from=2020-01-01`));
    expect(byPipeline.pipelineRuns.data.map((r: Any) => r.id)).toEqual([processed.id]);
  });

  test("bad filters: BAD_USER_INPUT with REST's message", async () => {
    const e = await refused("{ runs(from: \"yesterday\") { data { id } } }", {}, ["GET", "/pipeline-runs?from=yesterday"]);
    expect(e.extensions.code).toBe("BAD_USER_INPUT");
    expect(e.message).toContain("from");
    const range = await refused('{ runs(from: "2026-02-01", to: "2026-01-01") { data { id } } }', {}, ["GET", "/pipeline-runs?from=2026-02-01&to=2026-01-01"]);
    expect(range.message).toContain("to: must not be before from");
    const limit = await refused("{ runs(limit: 1000) { data { id } } }", {}, ["GET", "/pipeline-runs?limit=1000"]);
    expect(limit.message).toContain("limit");
  });

  test("acknowledgeRun: the run as REST then reads it", async () => {
    const { acknowledgeRun } = await gql(`mutation($id: ID!) { acknowledgeRun(id: $id) { ${RUN} } }`, { id: compare.id });
    expect(acknowledgeRun.status).toBe("acknowledged");
    same(acknowledgeRun, await h.ok(ws, "GET", `/pipeline-runs/${compare.id}`));
  });

  test("retryRun: a failed run goes back to pending; a run that did not fail is refused like REST", async () => {
    const { retryRun } = await gql(`mutation($id: ID!) { retryRun(id: $id) { id status } }`, { id: failed.id });
    expect(retryRun).toEqual({ id: failed.id, status: "pending" });
    const e = await refused("mutation($id: ID!) { retryRun(id: $id) { id } }", { id: base.id }, ["POST", `/pipeline-runs/${base.id}/retry`]);
    expect(e.extensions.code).toBe("CONFLICT");
  });
});

describe("files and delta", () => {
  test("runFileLink: REST's link, and it downloads the file", async () => {
    const { original, processed: proc } = await gql(
      `query($id: ID!) { original: runFileLink(id: $id, which: original) { url filename expiresIn mimetype }
        processed: runFileLink(id: $id, which: processed) { url filename expiresIn mimetype } }`,
      { id: base.id },
    );
    const rest = await h.ok(ws, "GET", `/files/pipeline-runs/${base.id}/processed`);
    expect({ ...proc, url: undefined }).toEqual({ ...rest, url: undefined });
    expect(await (await fetchLink(h, proc.url)).text()).toBe(base.processedText!);
    expect(await (await fetchLink(h, original.url)).text()).toBe(base.original);
    const e = await refused(`{ runFileLink(id: "${unprocessed.id}", which: processed) { url } }`, {}, ["GET", `/files/pipeline-runs/${unprocessed.id}/processed`]);
    expect(e.extensions.code).toBe("CONFLICT");
  });

  test("searchFiles answers what POST /files/search answers (timing aside)", async () => {
    const input = { pipelineRunIds: [base.id, compare.id], searchTerm: "a-1", fieldName: "sku" };
    const { searchFiles } = await gql(
      `query($input: SearchFilesInput!) { searchFiles(input: $input) {
        results { pipelineRunId filename rowIndex inputRow rowData matchingFields processedAt pipelineName clientName }
        pagination { total offset limit returned } metadata } }`,
      { input },
    );
    const rest = await h.ok(ws, "POST", "/files/search", input);
    expect(searchFiles.results.map((r: Any) => [r.pipelineRunId, r.rowIndex])).toEqual([
      [base.id, 0],
      [compare.id, 0],
    ]);
    same(searchFiles.results, rest.results);
    same(searchFiles.pagination, rest.pagination);
    expect({ ...searchFiles.metadata, searchDurationMs: 0 }).toEqual({ ...rest.metadata, searchDurationMs: 0 });
  });

  test("searchFiles: bad input is BAD_USER_INPUT with REST's message; another workspace's run is NOT_FOUND", async () => {
    const q = "query($input: SearchFilesInput!) { searchFiles(input: $input) { pagination { total } } }";
    const empty = await refused(q, { input: { pipelineRunIds: [] } }, ["POST", "/files/search", { pipelineRunIds: [] }]);
    expect(empty.extensions.code).toBe("BAD_USER_INPUT");
    const body = { pipelineRunIds: [base.id, intruderRun.id] };
    const foreign = await refused(q, { input: body }, ["POST", "/files/search", body]);
    expect(foreign.extensions.code).toBe("NOT_FOUND");
  });

  test("runDelta answers what GET /pipeline-runs/delta answers", async () => {
    const { runDelta } = await gql(
      `query($b: ID!, $c: ID!) { runDelta(baseRunId: $b, compareRunId: $c, limit: 1, page: 2) {
        baseRunId compareRunId pipelineId summary { baseCount compareCount added removed unchanged }
        changes { type rowIndex record } pagination } }`,
      { b: base.id, c: compare.id },
    );
    const rest = await h.ok(ws, "GET", `/pipeline-runs/delta?baseRunId=${base.id}&compareRunId=${compare.id}&limit=1&page=2`);
    same(runDelta, rest);
    expect(runDelta.summary).toMatchObject({ added: 1, removed: 1, unchanged: 1 });
  });

  test("runDelta across pipelines or workspaces: REST's errors", async () => {
    const q = "query($b: ID!, $c: ID!) { runDelta(baseRunId: $b, compareRunId: $c) { pipelineId } }";
    const across = await refused(q, { b: base.id, c: processed.id }, ["GET", `/pipeline-runs/delta?baseRunId=${base.id}&compareRunId=${processed.id}`]);
    expect(across.extensions.code).toBe("BAD_USER_INPUT");
    const foreign = await refused(q, { b: base.id, c: intruderRun.id }, ["GET", `/pipeline-runs/delta?baseRunId=${base.id}&compareRunId=${intruderRun.id}`]);
    expect(foreign.extensions.code).toBe("NOT_FOUND");
  });
});

describe("another workspace's runs", () => {
  test.each([
    ["run", `query($id: ID!) { run(id: $id) { id } }`, (id: string): [string, string, unknown?] => ["GET", `/pipeline-runs/${id}`]],
    ["acknowledgeRun", `mutation($id: ID!) { acknowledgeRun(id: $id) { id } }`, (id: string): [string, string, unknown?] => ["PATCH", `/pipeline-runs/${id}/status`, { status: "acknowledged" }]],
    ["retryRun", `mutation($id: ID!) { retryRun(id: $id) { id } }`, (id: string): [string, string, unknown?] => ["POST", `/pipeline-runs/${id}/retry`]],
    ["runFileLink", `query($id: ID!) { runFileLink(id: $id, which: original) { url } }`, (id: string): [string, string, unknown?] => ["GET", `/files/pipeline-runs/${id}/original`]],
  ] as const)("%s: NOT_FOUND with REST's message, and nothing changes", async (_field, query, rest) => {
    const before = await h.ok(ws, "GET", `/pipeline-runs/${processed.id}`);
    const e = await refused(query, { id: processed.id }, rest(processed.id), intruder);
    expect(e.extensions).toEqual({ code: "NOT_FOUND", error: "not_found", statusCode: 404 , requestId: expect.any(String) });
    expect(await h.ok(ws, "GET", `/pipeline-runs/${processed.id}`)).toEqual(before);
  });

  test("lists and pipelineRuns show nothing of another workspace", async () => {
    const { runs } = await gql(`{ runs { data { id } ${PAGE} } }`, undefined, intruder);
    expect(runs.data.map((r: Any) => r.id)).toEqual([intruderRun.id]);
    const e = await refused("query($p: ID!) { pipelineRuns(pipelineId: $p) { data { id } } }", { p: pipelineId }, ["GET", `/pipeline-runs/pipeline/${pipelineId}`], intruder);
    expect(e.extensions.code).toBe("NOT_FOUND");
  });
});
