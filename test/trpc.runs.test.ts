import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { type FixturePipeline, type FixtureRun, fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { appRouter } from "../trpc/router";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, runToEnd } from "./helpers/runs";

/**
 * Runs, files and delta over tRPC: results equal REST's (2026-05-25), in
 * process (createCaller) and over HTTP (/trpc); refusals carry REST's
 * message and the tRPC code from the transport's table.
 */

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are compared whole
type Any = any;

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
  pipelineId = (await createPipeline(h, ws, { connectionName: "Acme Warehouse" })).pipeline.id;
  processed = await runToEnd(h, ws, pipelineId);
  expect(processed.status).toBe("completed");
  fp = await fixturePipeline(h, ws);
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

/** What the value looks like on the wire: dates become ISO strings. */
const wire = (v: unknown): Any => JSON.parse(JSON.stringify(v));

async function rest(method: string, path: string, body?: unknown, w: TestWorkspace = ws): Promise<Any> {
  const r = await h.api(w, method, path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

/** The TRPCError a call fails with, next to REST's reply to the same call. */
async function refused(call: () => Promise<unknown>, restCall: [string, string, unknown?], w: TestWorkspace = ws): Promise<TRPCError> {
  const e = await call().then(
    () => null,
    (err) => err,
  );
  expect(e).toBeInstanceOf(TRPCError);
  const r = await h.api(w, restCall[0], restCall[1], restCall[2]);
  expect(e.message).toBe(r.body.message);
  return e;
}

const trpcGet = (path: string, input?: unknown, key: string = ws.apiKey) =>
  h.request("GET", `/trpc/${path}${input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(input))}`}`, { key });
const trpcPost = (path: string, body: unknown, key: string = ws.apiKey) => h.request("POST", `/trpc/${path}`, { key, body });

describe("runs", () => {
  test("get, list and listByPipeline equal REST", async () => {
    const t = h.trpc(ws);
    expect(wire(await t.runs.get({ id: processed.id }))).toEqual(await rest("GET", `/pipeline-runs/${processed.id}`));
    const list = await t.runs.list({ limit: 2 });
    const restList = await h.api(ws, "GET", "/pipeline-runs?limit=2");
    expect(wire(list.data)).toEqual(restList.body.data ?? restList.body);
    expect(list.pagination.total).toBe(5);
    const failedOnly = await t.runs.list({ status: "failed", pipelineId: fp.id });
    expect(failedOnly.data.map((r) => r.id)).toEqual([failed.id]);
    const byPipeline = await t.runs.listByPipeline({ pipelineId, connectionName: "ACME" });
    expect(wire(byPipeline)).toEqual(wire(await rest("GET", `/pipeline-runs/pipeline/${pipelineId}?connectionName=ACME`)));
  });

  test("bad filters: BAD_REQUEST with REST's message", async () => {
    const t = h.trpc(ws);
    const e = await refused(() => t.runs.list({ from: "yesterday" }), ["GET", "/pipeline-runs?from=yesterday"]);
    expect(e.code).toBe("BAD_REQUEST");
    const status = await refused(() => t.runs.list({ status: "done" as never }), ["GET", "/pipeline-runs?status=done"]);
    expect(status.message).toContain("status");
    const missing = await t.runs.listByPipeline({} as never).catch((x) => x);
    expect(missing).toBeInstanceOf(TRPCError);
    expect(missing.code).toBe("BAD_REQUEST");
    expect(missing.message).toBe("pipelineId: is required");
  });

  test("acknowledge and retry equal REST; retrying a run that did not fail is CONFLICT", async () => {
    const t = h.trpc(ws);
    const acked = await t.runs.acknowledge({ id: compare.id });
    expect(acked.status).toBe("acknowledged");
    expect(wire(acked)).toEqual(await rest("GET", `/pipeline-runs/${compare.id}`));
    const retried = await t.runs.retry({ id: failed.id });
    expect(retried.status).toBe("pending");
    const e = await refused(() => t.runs.retry({ id: base.id }), ["POST", `/pipeline-runs/${base.id}/retry`]);
    expect(e.code).toBe("CONFLICT");
  });

  test("over HTTP: GET queries and POST mutations", async () => {
    const got = await trpcGet("runs.get", { id: processed.id });
    expect(got.status).toBe(200);
    expect(got.body.result.data).toEqual(await rest("GET", `/pipeline-runs/${processed.id}`));
    const acked = await trpcPost("runs.acknowledge", { id: processed.id });
    expect(acked.body.result.data.status).toBe("acknowledged");
    const foreign = await trpcGet("runs.get", { id: processed.id }, intruder.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.data).toMatchObject({ code: "NOT_FOUND", error: "not_found", statusCode: 404 });
  });
});

describe("files and delta", () => {
  test("link equals REST's (the signature aside) for both files", async () => {
    const t = h.trpc(ws);
    for (const which of ["original", "processed"] as const) {
      const link = await t.files.link({ id: base.id, which });
      const r = await rest("GET", `/files/pipeline-runs/${base.id}/${which}`);
      expect({ ...link, url: new URL(link.url).pathname }).toEqual({ ...r, url: new URL(r.url).pathname });
    }
  });

  test("link: a bad `which` is BAD_REQUEST naming it; no processed file is CONFLICT", async () => {
    const t = h.trpc(ws);
    const bad = await t.files.link({ id: base.id, which: "thumbnail" as never }).catch((x) => x);
    expect(bad).toBeInstanceOf(TRPCError);
    expect(bad.code).toBe("BAD_REQUEST");
    expect(bad.message).toBe("which: must be one of original, processed, rejects");
    const none = await refused(() => t.files.link({ id: unprocessed.id, which: "processed" }), ["GET", `/files/pipeline-runs/${unprocessed.id}/processed`]);
    expect(none.code).toBe("CONFLICT");
  });

  test("search equals POST /files/search (timing aside); bad input and foreign runs are refused like REST", async () => {
    const t = h.trpc(ws);
    const input = { pipelineRunIds: [base.id, compare.id], searchTerm: "A-1", exactMatch: true };
    const found = wire(await t.files.search(input));
    const r = await rest("POST", "/files/search", input);
    expect(found.results).toEqual(r.results);
    expect(found.results).toHaveLength(2);
    expect({ ...found.metadata, searchDurationMs: 0 }).toEqual({ ...r.metadata, searchDurationMs: 0 });
    const bad = await refused(() => t.files.search({ pipelineRunIds: [], limit: 0 }), ["POST", "/files/search", { pipelineRunIds: [], limit: 0 }]);
    expect(bad.code).toBe("BAD_REQUEST");
    const foreign = await refused(() => t.files.search({ pipelineRunIds: [intruderRun.id] }), ["POST", "/files/search", { pipelineRunIds: [intruderRun.id] }]);
    expect(foreign.code).toBe("NOT_FOUND");
  });

  test("delta equals GET /pipeline-runs/delta; runs of two pipelines are BAD_REQUEST", async () => {
    const t = h.trpc(ws);
    const d = await t.runs.delta({ baseRunId: base.id, compareRunId: compare.id });
    expect(wire(d)).toEqual(await rest("GET", `/pipeline-runs/delta?baseRunId=${base.id}&compareRunId=${compare.id}`));
    expect(d.summary).toMatchObject({ added: 1, removed: 1, unchanged: 1 });
    const across = await refused(
      () => t.runs.delta({ baseRunId: base.id, compareRunId: processed.id }),
      ["GET", `/pipeline-runs/delta?baseRunId=${base.id}&compareRunId=${processed.id}`],
    );
    expect(across.code).toBe("BAD_REQUEST");
  });
});

describe("another workspace's runs", () => {
  /** Every runs and files procedure but the workspace-wide list, called by the intruder with the owner's ids. */
  const BY_ID: Record<string, () => [(t: ReturnType<typeof h.trpc>) => Promise<unknown>, [string, string, unknown?]]> = {
    "runs.get": () => [(t) => t.runs.get({ id: base.id }), ["GET", `/pipeline-runs/${base.id}`]],
    "runs.listByPipeline": () => [(t) => t.runs.listByPipeline({ pipelineId: fp.id }), ["GET", `/pipeline-runs/pipeline/${fp.id}`]],
    "runs.acknowledge": () => [(t) => t.runs.acknowledge({ id: base.id }), ["PATCH", `/pipeline-runs/${base.id}/status`, { status: "acknowledged" }]],
    "runs.retry": () => [(t) => t.runs.retry({ id: base.id }), ["POST", `/pipeline-runs/${base.id}/retry`]],
    "runs.reprocess": () => [(t) => t.runs.reprocess({ id: base.id, version: 1 }), ["POST", `/pipeline-runs/${base.id}/reprocess`, { version: 1 }]],
    "runs.delta": () => [
      (t) => t.runs.delta({ baseRunId: intruderRun.id, compareRunId: base.id }),
      ["GET", `/pipeline-runs/delta?baseRunId=${intruderRun.id}&compareRunId=${base.id}`],
    ],
    "runs.onUpdate": () => [(t) => t.runs.onUpdate({ runId: base.id }), ["GET", `/pipeline-runs/${base.id}`]],
    "files.link": () => [(t) => t.files.link({ id: base.id, which: "processed" }), ["GET", `/files/pipeline-runs/${base.id}/processed`]],
    "files.search": () => [(t) => t.files.search({ pipelineRunIds: [base.id] }), ["POST", "/files/search", { pipelineRunIds: [base.id] }]],
  };

  test("the table covers every runs and files procedure but the list", () => {
    const procedures = Object.keys(appRouter._def.procedures).filter((p) => /^(runs|files)\./.test(p) && p !== "runs.list");
    expect(Object.keys(BY_ID).sort()).toEqual(procedures.sort());
  });

  test.each(Object.keys(BY_ID))("%s: NOT_FOUND with REST's message, and nothing changes", async (path) => {
    const before = await rest("GET", `/pipeline-runs/${base.id}`);
    const [call, restCall] = BY_ID[path]!();
    const e = await refused(() => call(h.trpc(intruder)), restCall, intruder);
    expect(e.code).toBe("NOT_FOUND");
    expect(await rest("GET", `/pipeline-runs/${base.id}`)).toEqual(before);
  });

  test("the list shows nothing of another workspace", async () => {
    expect((await h.trpc(intruder).runs.list()).data.map((r) => r.id)).toEqual([intruderRun.id]);
    expect((await h.trpc(intruder).runs.list({ pipelineId: fp.id })).pagination.total).toBe(0);
  });
});
