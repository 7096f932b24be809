import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEM_MAPPINGS, ITEM_SCHEMA } from "./helpers/runs";

/**
 * tRPC `pipelines.previewDraft`: the preview of a pipeline not saved yet
 * (the mapping editor before its first save), from a schema id and mappings
 * instead of a pipeline id. The same answer as previewing a saved pipeline
 * with the same mappings; the same checks; nothing stored.
 */
let h: Harness;
let ws: TestWorkspace;
let schemaId: string;
let pipelineId: string;
const SAMPLE = "SKU,Qty,Name\na-1,3,Bolt\nb-2,ten,Nut\n";
const sample = { filename: "items.csv", text: SAMPLE };

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  ws = await h.workspace();
  const fx = await createPipeline(h, ws, { definition: ITEM_SCHEMA });
  schemaId = fx.schema.id;
  pipelineId = fx.pipeline.id;
});
afterAll(() => h.close());

const counts = async () => {
  const [pipelines, runs] = await Promise.all([h.ok(ws, "GET", "/pipelines?limit=100"), h.ok(ws, "GET", "/pipeline-runs?limit=100")]);
  const size = (page: any) => (Array.isArray(page) ? page.length : page.data.length);
  return { pipelines: size(pipelines), runs: size(runs) };
};

describe("previewing a pipeline not saved yet", () => {
  test("the same answer as the saved pipeline's preview with those mappings; nothing is stored", async () => {
    const before = await counts();
    const t = h.trpc(ws);
    const draft = await t.pipelines.previewDraft({ schemaId, mappings: ITEM_MAPPINGS as never, sample });
    const saved = await t.pipelines.preview({ id: pipelineId, data: { sample, mappings: ITEM_MAPPINGS as never } });
    expect({ ...draft, ms: 0 }).toEqual({ ...saved, ms: 0 });
    expect(draft.applied).toEqual({ mappings: "given", schemaId });
    expect(draft.columns).toEqual(["SKU", "Qty", "Name"]);
    expect(draft.rows[0]!.row).toEqual({ sku: "A-1", qty: 3, name: "Bolt" });
    expect(draft.rows[1]).toMatchObject({ valid: false, errors: [{ field: "qty" }] });
    expect(await counts()).toEqual(before);
  });

  test("a mapping change changes the preview: no mappings map nothing, and required fields are reported missing", async () => {
    const t = h.trpc(ws);
    const empty = await t.pipelines.previewDraft({ schemaId, sample });
    expect(empty.counts).toMatchObject({ total: 2, valid: 0, invalid: 2 });
    expect(empty.rows[0]!.errors.map((e) => e.field).sort()).toEqual(["qty", "sku"]);
    const renamed = await t.pipelines.previewDraft({
      schemaId,
      mappings: { fieldMappings: [{ target: "sku", source: "SKU", transform: "lowercase" }, { target: "qty", value: "1" }] } as never,
      sample,
    });
    expect(renamed.rows.map((r) => r.row)).toEqual([
      { sku: "a-1", qty: 1 },
      { sku: "b-2", qty: 1 },
    ]);
  });

  test("refused: no schemaId (400 naming it), another workspace's schema (404), an unknown transform (400), aggregated mappings without the feature", async () => {
    const t = h.trpc(ws);
    const refuse = async (data: unknown) => (await t.pipelines.previewDraft(data as never).catch((x) => x)) as { code: string; message: string };
    const noSchema = await refuse({ sample });
    expect(noSchema.code).toBe("BAD_REQUEST");
    expect(noSchema.message).toContain("schemaId");
    const other = await h.workspace();
    const theirs = await h.ok(other, "POST", "/schemas", { name: "Theirs", definition: ITEM_SCHEMA });
    const foreign = await refuse({ schemaId: theirs.id, sample });
    expect(foreign.code).toBe("NOT_FOUND");
    expect(foreign.message).toContain(theirs.id);
    const badTransform = await refuse({ schemaId, sample, mappings: { fieldMappings: [{ target: "sku", source: "SKU", transform: "shout" }] } });
    expect(badTransform.code).toBe("BAD_REQUEST");
    expect(badTransform.message).toContain("unknown transform 'shout'");
    const aggregated = await refuse({ schemaId, sample, mappings: { fieldMappings: [{ target: "sku", sources: ["SKU", "Name"] }] } });
    expect(aggregated.message).toBe("mappings.fieldMappings[0].sources: aggregated mappings are not enabled for this workspace");
    const noSample = await refuse({ schemaId });
    expect(noSample.code).toBe("BAD_REQUEST");
  });

  test("with the feature enabled, an aggregated mapping is previewed", async () => {
    const featured = await h.workspace({ features: ["aggregated-mappings"] });
    const schema = await h.ok(featured, "POST", "/schemas", { name: "Joined", definition: { type: "object", properties: { label: { type: "string" } } } });
    const r = await h.trpc(featured).pipelines.previewDraft({
      schemaId: schema.id,
      mappings: { fieldMappings: [{ target: "label", sources: ["SKU", "Name"], delimiter: " / " }] } as never,
      sample,
    });
    expect(r.rows[0]!.row).toEqual({ label: "a-1 / Bolt" });
  });
});
