import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectError } from "./helpers/expect";
import { type FixtureRun, fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";

/** Another workspace's runs are never found: not searched, not linked, not fetched, not compared. */
let h: Harness;
let owner: TestWorkspace;
let intruder: TestWorkspace;
let secret: FixtureRun;
let secret2: FixtureRun;
let own: FixtureRun;

beforeAll(async () => {
  h = await Harness.start();
  owner = await h.workspace({ name: "Owner" });
  intruder = await h.workspace({ name: "Intruder" });
  const p = await fixturePipeline(h, owner);
  secret = await fixtureRun(h, owner, p, { rows: [{ card: "4111-secret" }], filename: "secret.csv" });
  secret2 = await fixtureRun(h, owner, p, { rows: [{ card: "4222-secret" }], filename: "secret.csv" });
  const q = await fixturePipeline(h, intruder);
  own = await fixtureRun(h, intruder, q, { rows: [{ card: "mine" }], filename: "mine.csv" });
});
afterAll(() => h.close());

describe("another workspace's runs", () => {
  test("search: 404 naming the run, and no results even beside an own run", async () => {
    const alone = await h.api(intruder, "POST", "/files/search", { pipelineRunIds: [secret.id] });
    expectError(alone, 404, "not_found", `pipelineRunIds[0]: pipeline run '${secret.id}' not found`);
    const mixed = await h.api(intruder, "POST", "/files/search", { pipelineRunIds: [own.id, secret.id], searchTerm: "secret" });
    expectError(mixed, 404, "not_found", `pipelineRunIds[1]: pipeline run '${secret.id}' not found`);
    expect(JSON.stringify(mixed.body)).not.toContain("4111");
    // The owner finds it.
    expect((await h.ok(owner, "POST", "/files/search", { pipelineRunIds: [secret.id], searchTerm: "secret" })).pagination.total).toBe(1);
  });

  test("links: 404 for both files", async () => {
    for (const which of ["original", "processed"]) {
      const res = await h.api(intruder, "GET", `/files/pipeline-runs/${secret.id}/${which}`);
      expectError(res, 404, "not_found", `pipeline run '${secret.id}' not found`);
    }
  });

  test("JSON fetch: 404 by run id and by name", async () => {
    expectError(await h.api(intruder, "GET", `/files/json?pipelineRunId=${secret.id}`), 404, "not_found");
    expectError(await h.api(intruder, "GET", "/files/json?filename=secret.processed.json"), 404, "not_found", "filename: no processed file named");
    expectError(await h.api(intruder, "GET", "/files/json?filename=secret.csv"), 404, "not_found");
    expect((await h.api(owner, "GET", "/files/json?filename=secret.processed.json")).status).toBe(200);
  });

  test("delta: 404 for either side, even with an own run on the other", async () => {
    expectError(await h.api(intruder, "GET", `/pipeline-runs/delta?baseRunId=${secret.id}&compareRunId=${secret2.id}`), 404, "not_found", "baseRunId:");
    expectError(await h.api(intruder, "GET", `/pipeline-runs/delta?baseRunId=${own.id}&compareRunId=${secret.id}`), 404, "not_found", "compareRunId:");
    expectError(await h.api(intruder, "GET", `/pipeline-runs/delta?baseRunId=${secret.id}&compareRunId=${own.id}`), 404, "not_found", "baseRunId:");
  });

  test("without a key every files route is a 401", async () => {
    for (const [method, path] of [
      ["POST", "/files/search"],
      ["GET", `/files/pipeline-runs/${secret.id}/original`],
      ["GET", `/files/pipeline-runs/${secret.id}/processed`],
      ["GET", `/files/json?pipelineRunId=${secret.id}`],
      ["GET", `/pipeline-runs/delta?baseRunId=${secret.id}&compareRunId=${secret2.id}`],
    ] as const) {
      const res = await h.request(method, path, { body: method === "POST" ? { pipelineRunIds: [secret.id] } : undefined });
      expectError(res, 401, "unauthorized");
    }
  });
});
