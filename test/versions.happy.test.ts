import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database as Sqlite } from "bun:sqlite";
import { join } from "node:path";
import postgres from "postgres";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { trpcClient as officialTrpc } from "./helpers/trpc-client";
import { createPipeline, ITEM_MAPPINGS, ITEM_SCHEMA, type PipelineFixture, runToEnd } from "./helpers/runs";

/**
 * Pipeline versions: a new one exactly when what decides how files are
 * processed changes (mappings, schemaId, the schema's definition), listed
 * with what changed and who changed it; a run names the version that
 * processed it. REST, GraphQL and tRPC (the official client over HTTP).
 */

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are compared member by member
type Any = any;

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
let fx: PipelineFixture;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Owner" });
  other = await h.workspace({ name: "Other" });
  fx = await createPipeline(h, ws);
});
afterAll(() => h.close());

const versions = async (id: string, qs = ""): Promise<Any> => h.ok(ws, "GET", `/pipelines/${id}/versions${qs}`);
const current = async (id: string): Promise<number> => (await h.ok(ws, "GET", `/pipelines/${id}`)).version;
const patch = (id: string, body: unknown) => h.ok(ws, "PATCH", `/pipelines/${id}`, body);

const trpcClient = (w: TestWorkspace) => officialTrpc(h, w);

describe("what makes a version", () => {
  test("a new pipeline is version 1, made by its creator", async () => {
    expect(fx.pipeline.version).toBe(1);
    const list = await versions(fx.pipeline.id);
    expect(list.pagination).toEqual({ page: 1, limit: 20, total: 1, totalPages: 1 });
    expect(list.data[0]).toMatchObject({
      pipelineId: fx.pipeline.id,
      version: 1,
      reason: "created",
      changes: { fields: [] },
      mappings: { fieldMappings: ITEM_MAPPINGS.fieldMappings, options: {}, validations: {} },
      schemaId: fx.schema.id,
      createdBy: { type: "key", id: ws.keyId },
    });
    expect(typeof list.data[0].createdAt).toBe("string");
  });

  test("a rename, (de)activation, another connection or the same mappings sent again make none", async () => {
    const conn = await h.ok(ws, "POST", "/connections", { name: "Second partner", type: "SFTP", useHostedSFTP: true });
    await patch(fx.pipeline.id, { name: "Renamed items" });
    await patch(fx.pipeline.id, { isActive: false });
    await patch(fx.pipeline.id, { isActive: true, clientId: conn.id });
    // Sent back exactly as read, read-only members and all.
    const read = await h.ok(ws, "GET", `/pipelines/${fx.pipeline.id}`);
    const again = await patch(fx.pipeline.id, read);
    expect(again.version).toBe(1);
    await patch(fx.pipeline.id, { mappings: { validations: {} } });
    expect(await current(fx.pipeline.id)).toBe(1);
    expect((await versions(fx.pipeline.id)).pagination.total).toBe(1);
  });

  test("each change of fieldMappings, options, validations or schemaId is one version, saying what changed", async () => {
    const id = fx.pipeline.id;
    const mapped = await patch(id, {
      mappings: {
        fieldMappings: [
          { source: "SKU", target: "sku", transform: "uppercase" },
          { source: "Qty", target: "qty", transform: "number" },
          { source: "Colour", target: "colour" },
        ],
      },
    });
    expect(mapped.version).toBe(2);
    await patch(id, { mappings: { options: { delimiter: ";", headerMatch: "case-insensitive" } } });
    await patch(id, { mappings: { options: { delimiter: ";" }, validations: { onInvalidRow: "skip" } } });
    const schema2 = await h.ok(ws, "POST", "/schemas", { name: "Items v2", definition: ITEM_SCHEMA });
    const moved = await patch(id, { schemaId: schema2.id });
    expect(moved.version).toBe(5);

    const list = await versions(id);
    expect(list.data.map((v: Any) => [v.version, v.reason])).toEqual([
      [5, "updated"],
      [4, "updated"],
      [3, "updated"],
      [2, "updated"],
      [1, "created"],
    ]);
    const [v5, v4, v3, v2] = list.data;
    expect(v2.changes).toEqual({ fields: ["mappings.fieldMappings"], fieldMappings: { added: ["colour"], removed: ["name"], changed: ["qty"] } });
    expect(v2.mappings.fieldMappings[2]).toEqual({ source: "Colour", target: "colour" });
    expect(v3.changes).toEqual({ fields: ["mappings.options"], options: ["delimiter", "headerMatch"] });
    // One PATCH changing two members is one version naming both.
    expect(v4.changes).toEqual({ fields: ["mappings.options", "mappings.validations"], options: ["headerMatch"], validations: ["onInvalidRow"] });
    expect(v5.changes).toEqual({ fields: ["schemaId"], schemaId: { from: fx.schema.id, to: schema2.id } });
    expect(v5.schemaId).toBe(schema2.id);
    expect(v4.schemaId).toBe(fx.schema.id);
    for (const v of list.data) expect(v.createdBy).toEqual({ type: "key", id: ws.keyId, name: expect.any(String) });
  });

  test("a schema's new definition is a version of every pipeline validating against it; its rename is none", async () => {
    const a = await createPipeline(h, ws);
    const schemaId = a.schema.id;
    const b = await h.ok(ws, "POST", "/pipelines", { name: "Same schema", clientId: a.connection.id, schemaId, mappings: ITEM_MAPPINGS });
    const bystander = await createPipeline(h, ws);
    await h.ok(ws, "PATCH", `/schemas/${schemaId}`, { name: "Renamed schema", description: "only words" });
    expect(await current(a.pipeline.id)).toBe(1);
    await h.ok(ws, "PATCH", `/schemas/${schemaId}`, { definition: { ...ITEM_SCHEMA, required: ["sku"] } });
    expect(await current(a.pipeline.id)).toBe(2);
    expect(await current(b.id)).toBe(2);
    expect(await current(bystander.pipeline.id)).toBe(1);
    const [latest] = (await versions(b.id)).data;
    expect(latest).toMatchObject({ version: 2, reason: "schemaUpdated", changes: { fields: ["schema.definition"] }, schemaId });
    // The same definition saved again is no change.
    await h.ok(ws, "PATCH", `/schemas/${schemaId}`, { definition: { ...ITEM_SCHEMA, required: ["sku"] } });
    expect(await current(b.id)).toBe(2);
  });
});

describe("the list", () => {
  test("pages newest first; bad paging names the field", async () => {
    const id = fx.pipeline.id;
    const page2 = await versions(id, "?limit=2&page=2");
    expect(page2.data.map((v: Any) => v.version)).toEqual([3, 2]);
    expect(page2.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3 });
    const bad = await h.api(ws, "GET", `/pipelines/${id}/versions?limit=1000`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("limit");
    expect(bad.body.requestId).toBeString();
  });

  test("another workspace's pipeline, an unknown one and a deleted one are 404", async () => {
    expect((await h.api(other, "GET", `/pipelines/${fx.pipeline.id}/versions`)).status).toBe(404);
    expect((await h.api(ws, "GET", "/pipelines/pipe_nothing/versions")).status).toBe(404);
    const gone = await createPipeline(h, ws);
    await h.ok(ws, "DELETE", `/pipelines/${gone.pipeline.id}`);
    const r = await h.api(ws, "GET", `/pipelines/${gone.pipeline.id}/versions`);
    expect(r.status).toBe(404);
    expect(r.body.message).toContain(gone.pipeline.id);
  });
});

describe("a run names its version", () => {
  test("a run is processed with, and reports, the version current when it is processed", async () => {
    const p = await createPipeline(h, ws);
    const first = await runToEnd(h, ws, p.pipeline.id);
    expect(first.pipelineVersion).toBe(1);
    expect(first.metadata.output.rows).toBe(3);
    await patch(p.pipeline.id, { mappings: { fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty", transform: "integer" }] } });
    const second = await runToEnd(h, ws, p.pipeline.id);
    expect(second.pipelineVersion).toBe(2);
    // The earlier run keeps the version that processed it.
    expect((await h.ok(ws, "GET", `/pipeline-runs/${first.id}`)).pipelineVersion).toBe(1);
  });
});

describe("GraphQL and tRPC", () => {
  test("the pipeline's version and its versions, as REST answers them", async () => {
    const id = fx.pipeline.id;
    const rest = await versions(id, "?limit=3");
    const g = await h.graphql(
      ws.apiKey,
      `query($id: ID!) { pipeline(id: $id) { version } pipelineVersions(id: $id, limit: 3) {
         data { pipelineId version reason schemaId createdAt requestId createdBy { type id name }
                changes { fields options validations fieldMappings { added removed changed } schemaId { from to } }
                mappings { fieldMappings { source target transform } options validations } }
         pagination { page limit total totalPages } } }`,
      { id },
    );
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.pipeline.version).toBe(5);
    const gql = g.body.data.pipelineVersions;
    expect(gql.pagination).toEqual(rest.pagination);
    expect(gql.data.map((v: Any) => v.version)).toEqual([5, 4, 3]);
    expect(gql.data[2].changes).toEqual({ fields: ["mappings.options"], options: ["delimiter", "headerMatch"], validations: null, fieldMappings: null, schemaId: null });
    expect(gql.data[0].changes.schemaId).toEqual(rest.data[0].changes.schemaId);
    expect(gql.data[0].createdAt).toBe(rest.data[0].createdAt);

    const t = trpcClient(ws);
    const viaTrpc = await t.pipelines.versions.query({ id, limit: 3 });
    expect(JSON.parse(JSON.stringify(viaTrpc))).toEqual(rest);
    expect((await t.pipelines.get.query({ id })).version).toBe(5);
  });

  test("another workspace's pipeline is NOT_FOUND on both; bad paging is a BAD_REQUEST naming the field", async () => {
    const g = await h.graphql(other.apiKey, `query($id: ID!) { pipelineVersions(id: $id) { data { version } } }`, { id: fx.pipeline.id });
    expect(g.body.data.pipelineVersions).toBeNull();
    expect(g.body.errors![0]!.extensions.code).toBe("NOT_FOUND");
    const t = trpcClient(other);
    const e = await t.pipelines.versions.query({ id: fx.pipeline.id }).catch((x) => x);
    expect(e.data.code).toBe("NOT_FOUND");
    const bad = await trpcClient(ws).pipelines.versions.query({ id: fx.pipeline.id, limit: 0 }).catch((x) => x);
    expect(bad.data.code).toBe("BAD_REQUEST");
    expect(bad.message).toContain("limit");
  });
});

describe("the migration", () => {
  test("a pipeline from before versions gets version 1 from its mappings and schema, and runs under it", async () => {
    const p = await createPipeline(h, ws);
    // As the pipeline stood before the migration: no versions.
    const statements = (await Bun.file(join(import.meta.dir, `../db/${h.childEnv().DATABASE_URL ? "pg" : "sqlite"}/migrations/0010_pipeline_versions.sql`)).text()).split(
      "--> statement-breakpoint",
    );
    const backfill = statements.at(-1)!;
    expect(backfill).toContain("INSERT INTO");
    const url = h.childEnv().DATABASE_URL;
    if (url) {
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      await sql`delete from pipeline_versions where pipeline_id = ${p.pipeline.id}`;
      await sql.unsafe(backfill.replace('JOIN "schemas" s ON s."id" = p."schema_id"', `JOIN "schemas" s ON s."id" = p."schema_id" WHERE p."id" = '${p.pipeline.id}'`));
      await sql.end();
    } else {
      const db = new Sqlite(join(h.dataDir, "service.db"));
      db.run("delete from pipeline_versions where pipeline_id = ?", [p.pipeline.id]);
      db.run(backfill.replace("JOIN `schemas` s ON s.`id` = p.`schema_id`", `JOIN \`schemas\` s ON s.\`id\` = p.\`schema_id\` WHERE p.\`id\` = '${p.pipeline.id}'`));
      db.close();
    }
    h.svc.db.clearReadCaches();
    const list = await versions(p.pipeline.id);
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ version: 1, reason: "migrated", changes: { fields: [] }, mappings: { fieldMappings: ITEM_MAPPINGS.fieldMappings }, schemaId: p.schema.id });
    expect("createdBy" in list.data[0]).toBe(false);
    const run = await runToEnd(h, ws, p.pipeline.id);
    expect(run.status).toBe("completed");
    expect(run.pipelineVersion).toBe(1);
  });
});
