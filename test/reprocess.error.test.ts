import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { trpcClient as officialTrpc } from "./helpers/trpc-client";
import { createPipeline, runToEnd } from "./helpers/runs";

/**
 * Reprocess refusals: each a clear status and message, with nothing made;
 * another workspace's run is a 404 on every surface.
 */

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are compared member by member
type Any = any;

let h: Harness;
let ws: TestWorkspace;
let intruder: TestWorkspace;
let pipelineId: string;
let run: Any;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Owner" });
  intruder = await h.workspace({ name: "Intruder" });
  pipelineId = (await createPipeline(h, ws)).pipeline.id;
  run = await runToEnd(h, ws, pipelineId);
  expect(run.status).toBe("completed");
});
afterAll(() => h.close());

const runCount = async () => (await h.ok(ws, "GET", "/pipeline-runs?limit=1")).pagination.total;

/** The refusal, after which the workspace has no more runs than before. */
async function refused(runId: string, body: unknown, status: number, w: TestWorkspace = ws): Promise<Any> {
  const before = await runCount();
  const r = await h.api(w, "POST", `/pipeline-runs/${runId}/reprocess`, body);
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.requestId).toBeString();
  expect(await runCount()).toBe(before);
  return r.body;
}

const trpcClient = (w: TestWorkspace) => officialTrpc(h, w);
const graphql = (w: TestWorkspace, id: string, version?: unknown) =>
  h.graphql(w.apiKey, `mutation($id: ID!, $v: Int) { reprocessRun(id: $id, version: $v) { id } }`, { id, v: version });

describe("bad input names the field", () => {
  test("a version that is not a whole number of at least 1, or an unknown member, is a 400", async () => {
    expect((await refused(run.id, { version: "two" }, 400)).message).toContain("version");
    expect((await refused(run.id, { version: 0 }, 400)).message).toContain("version: must be at least 1");
    expect((await refused(run.id, { version: 1.5 }, 400)).message).toContain("version");
    expect((await refused(run.id, { versoin: 1 }, 400)).message).toContain("versoin");
  });

  test("a version the pipeline never had is a 404 naming it", async () => {
    const body = await refused(run.id, { version: 9 }, 404);
    expect(body.message).toContain("version: pipeline");
    expect(body.message).toContain("no version 9; its versions are 1 to 1");
  });

  test("a form body is a 415; malformed JSON a 400", async () => {
    const send = (type: string) =>
      h.request("POST", `/pipeline-runs/${run.id}/reprocess`, { key: ws.apiKey, version: "2026-05-25", rawBody: "version=1", headers: { "content-type": type } });
    expect((await send("application/x-www-form-urlencoded")).status).toBe(415);
    expect((await send("application/json")).status).toBe(400);
  });
});

describe("conflicts", () => {
  test("a run whose pipeline was deleted is a 409 saying so, on every surface", async () => {
    const gone = await createPipeline(h, ws);
    const old = await runToEnd(h, ws, gone.pipeline.id);
    await h.ok(ws, "DELETE", `/pipelines/${gone.pipeline.id}`);
    const body = await refused(old.id, undefined, 409);
    expect(body.message).toContain(`pipeline '${gone.pipeline.id}'`);
    expect(body.message).toContain("was deleted");
    const g = await graphql(ws, old.id);
    expect(g.body.errors![0]!.extensions.code).toBe("CONFLICT");
    expect(g.body.errors![0]!.message).toBe(body.message);
    const e = await trpcClient(ws).runs.reprocess.mutate({ id: old.id }).catch((x) => x);
    expect(e.data.code).toBe("CONFLICT");
    expect(e.message).toBe(body.message);
  });

  test("a run whose original file is no longer stored is a 409 naming why", async () => {
    const p = await fixturePipeline(h, ws);
    const f = await fixtureRun(h, ws, p, { rows: [{ sku: "A-1" }] });
    await h.svc.storage.delete(f.originalKey);
    const body = await refused(f.id, {}, 409);
    expect(body.message).toContain("original file");
    expect(body.message).toContain("no longer stored");
  });

  test("a run still processing is a 409; an inactive pipeline is a 409", async () => {
    const p = await fixturePipeline(h, ws);
    const busy = await fixtureRun(h, ws, p, { rows: null, status: "processing" });
    expect((await refused(busy.id, undefined, 409)).message).toContain("is processing");
    const ended = await fixtureRun(h, ws, p, { rows: [{ sku: "A-1" }] });
    await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { isActive: false });
    expect((await refused(ended.id, undefined, 409)).message).toContain("inactive");
    await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { isActive: true });
    // A run from before versions (none recorded) is reprocessed under the current version.
    const r = await h.ok(ws, "POST", `/pipeline-runs/${ended.id}/reprocess`);
    expect(r).toMatchObject({ reprocessOf: ended.id, pipelineVersion: 1 });
  });
});

describe("another workspace", () => {
  test("another workspace's run is a 404 on REST, GraphQL and tRPC, and nothing is made", async () => {
    const body = await refused(run.id, undefined, 404, intruder);
    expect(body.message).toBe(`pipeline run '${run.id}' not found`);
    const g = await graphql(intruder, run.id, 1);
    expect(g.body.data.reprocessRun).toBeNull();
    expect(g.body.errors![0]!.extensions.code).toBe("NOT_FOUND");
    const e = await trpcClient(intruder).runs.reprocess.mutate({ id: run.id }).catch((x) => x);
    expect(e.data.code).toBe("NOT_FOUND");
    expect(e.message).toBe(body.message);
    expect(await runCount()).toBe((await h.ok(ws, "GET", "/pipeline-runs?limit=1")).pagination.total);
  });

  test("tRPC without an id is a BAD_REQUEST naming it", async () => {
    const e = await trpcClient(ws)
      .runs.reprocess.mutate({} as never)
      .catch((x) => x);
    expect(e.data.code).toBe("BAD_REQUEST");
    expect(e.message).toContain("id");
  });
});
