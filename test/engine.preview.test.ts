import { describe, expect, test } from "bun:test";
import { previewHeaderPlan, previewSample, type PreviewRequest } from "../src/engine/preview";

const schema = { id: "sch_preview", version: "1", definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" } }, required: ["sku", "qty"] } };
const mappings = { fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty" }], options: {}, validations: {} };
const csv = (rows: number) => `SKU,Qty\n${Array.from({ length: rows }, (_, i) => `s${i},${i}`).join("\n")}\n`;
const req = (over: Partial<PreviewRequest>): PreviewRequest => ({
  filename: "a.csv",
  bytes: new TextEncoder().encode(csv(3)),
  truncated: false,
  mappings,
  schema,
  limit: 100,
  timeoutMs: 10_000,
  ...over,
});

describe("previewSample", () => {
  test("stops at the time limit between batches and says so; the counts cover the rows read", async () => {
    const big = new TextEncoder().encode(csv(200_000));
    const out = await previewSample(req({ bytes: big, timeoutMs: 0 }));
    expect(out.timedOut).toBe(true);
    expect(out.counts.total).toBeGreaterThan(0);
    expect(out.counts.total).toBeLessThan(200_000);
    expect(out.rows).toHaveLength(100);
  });

  test("an aborted request stops with a message", async () => {
    const abort = new AbortController();
    abort.abort();
    const out = await previewSample(req({ signal: abort.signal }));
    expect(out.run).toEqual({ status: "failed", errorMessage: "The preview was cancelled." });
  });

  test("a cut sample leaves out its last record; a whole one keeps it", async () => {
    expect((await previewSample(req({}))).counts.total).toBe(3);
    expect((await previewSample(req({ truncated: true }))).counts.total).toBe(2);
  });

  test("a cut JSON document counts the records read before the cut; one cut before any record says it was cut", async () => {
    const text = JSON.stringify(Array.from({ length: 50_000 }, (_, i) => ({ SKU: `s${i}`, Qty: i })));
    const out = await previewSample(req({ filename: "a.json", bytes: new TextEncoder().encode(text.slice(0, text.length / 2)), truncated: true }));
    expect(out.run.status).toBe("completed");
    expect(out.counts.total).toBeGreaterThan(1000);
    expect(out.counts.total).toBeLessThan(25_000);
    expect(out.counts.invalid).toBe(0);
    expect(out.detected?.format).toBe("json");
    const tiny = await previewSample(req({ filename: "a.json", bytes: new TextEncoder().encode(text.slice(0, 200)), truncated: true }));
    expect(tiny.run.status).toBe("failed");
    expect(tiny.run.errorMessage).toStartWith("The sample was cut at the preview's size limit (PREVIEW_MAX_BYTES)");
  });

  test("error budgets decide the verdict as a run would", async () => {
    const bad = new TextEncoder().encode("SKU,Qty\na,1\nb,x\nc,y\n");
    const skip = await previewSample(req({ bytes: bad, mappings: { ...mappings, validations: { onInvalidRow: "skip", maxInvalidRows: 1 } } }));
    expect(skip.counts).toEqual({ total: 3, valid: 1, invalid: 2, skipped: 2, quarantined: 0 });
    expect(skip.run.status).toBe("failed");
    expect(skip.run.errorMessage).toContain("maxInvalidRows");
    const ratio = await previewSample(req({ bytes: bad, mappings: { ...mappings, validations: { onInvalidRow: "skip", maxInvalidRatio: 0.9 } } }));
    expect(ratio.run.status).toBe("completed");
  });
});

describe("the preview's header check is the run's", () => {
  const schema = { id: "sch_1", version: "1", definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" }, n: { type: "string" } } } };
  const fieldMappings = [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty" }, { sources: ["Note"], target: "n" }, { value: "x", target: "v" }];
  test("a mapped column the header lacks is named with the closest header name; unused columns are listed", () => {
    const plan = previewHeaderPlan({ schema, mappings: { fieldMappings, options: {}, validations: {} } as never }, ["SKU", "Quantity", "Note", "Colour"]);
    expect(plan.problem).toContain("`Qty` not in the header; closest: `Quantity`");
    expect(plan.missing).toEqual(["Qty"]);
    expect(plan.summary.unusedColumns).toEqual(["Quantity", "Colour"]);
  });
  test("headerMatch: normalized finds `qty ` for `Qty`, and the plan reads the source as the header spells it", () => {
    const plan = previewHeaderPlan({ schema, mappings: { fieldMappings, options: { headerMatch: "normalized" }, validations: {} } as never }, ["sku", "qty ", "NOTE"]);
    expect(plan.problem).toBeNull();
    expect(plan.fieldMappings.map((m) => m.source ?? m.sources?.join("+"))).toEqual(["sku", "qty ", "NOTE", undefined]);
  });
});
