import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectError } from "./helpers/expect";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { complete, keysUnder, outboundPipeline, putPart, startUpload } from "./helpers/outbound";
import { createPipeline, type PipelineFixture } from "./helpers/runs";

/**
 * Every rule of the outbound upload API refuses with the standard error
 * body, names the member, and changes nothing: no session, no part, no run.
 * Another workspace's sessions and names are 404 on every surface.
 */
let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
let out: PipelineFixture;

const MAX_PART = 2048;
const MAX_FILE = 8192;

beforeAll(async () => {
  h = await Harness.start({ env: { OUTBOUND_MAX_PART_BYTES: String(MAX_PART), MAX_UPLOAD_BYTES: String(MAX_FILE) } });
  ws = await h.workspace({ name: "Mine" });
  other = await h.workspace({ name: "Theirs" });
  out = await outboundPipeline(h, ws, { connectionName: "Depot", name: "Depot out" });
  await createPipeline(h, ws, { connectionId: out.connection.id, name: "Depot in", direction: "inbound" });
  await outboundPipeline(h, ws, { connectionName: "Yard", name: "Yard out" });
  await outboundPipeline(h, ws, { connectionId: out.connection.id, name: "Depot off", isActive: false });
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

const counts = async () => ({
  sessions: await h.svc.db.read.$count(h.svc.db.t.outboundUploads),
  parts: await h.svc.db.read.$count(h.svc.db.t.outboundUploadParts),
  runs: await h.svc.db.read.$count(h.svc.db.t.pipelineRuns),
});
const VALID = { connectionName: "Depot", pipelineName: "Depot out", totalParts: 2 };
const newUpload = async (body: Record<string, unknown> = {}) => {
  const r = await startUpload(h, ws, { ...VALID, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.uploadId as string;
};

describe("POST /outbound/uploads", () => {
  const cases: [string, Record<string, unknown>, number, string, RegExp][] = [
    ["no connection name", { connectionName: undefined }, 400, "invalid_input", /^connectionName: is required/],
    ["clientName differing from connectionName", { clientName: "Yard" }, 400, "invalid_input", /^clientName: differs from connectionName/],
    ["an unknown connection", { connectionName: "Nowhere" }, 404, "not_found", /^connectionName: no connection of this workspace has that name$/],
    ["an unknown connection by clientName", { connectionName: undefined, clientName: "Nowhere" }, 404, "not_found", /^clientName: no connection/],
    ["an unknown pipeline", { pipelineName: "Nope" }, 404, "not_found", /^pipelineName: no pipeline of this workspace has that name$/],
    ["a pipeline of another connection", { pipelineName: "Yard out" }, 400, "invalid_input", /^pipelineName: pipeline 'Yard out' belongs to another connection, not to 'Depot'$/],
    ["an inbound pipeline", { pipelineName: "Depot in" }, 400, "invalid_input", /^pipelineName: pipeline 'Depot in' is inbound; outbound uploads need a pipeline with direction outbound$/],
    ["an inactive pipeline", { pipelineName: "Depot off" }, 409, "conflict", /^pipelineName: pipeline 'Depot off' is inactive/],
    ["no pipeline name", { pipelineName: undefined }, 400, "invalid_input", /^pipelineName: is required$/],
    ["no totalParts", { totalParts: undefined }, 400, "invalid_input", /^totalParts: is required$/],
    ["totalParts 0", { totalParts: 0 }, 400, "invalid_input", /^totalParts: must be at least 1$/],
    ["totalParts -3", { totalParts: -3 }, 400, "invalid_input", /^totalParts: must be at least 1$/],
    ["totalParts 1.5", { totalParts: 1.5 }, 400, "invalid_input", /^totalParts: must be a whole number$/],
    ["totalParts as text", { totalParts: "2" }, 400, "invalid_input", /^totalParts: must be a whole number$/],
    ["totalParts over 10000", { totalParts: 10_001 }, 400, "invalid_input", /^totalParts: must be at most 10000$/],
    ["a filename with a path", { filename: "../x.json" }, 400, "invalid_input", /^filename: must be a file name/],
    ["a filename with a backslash", { filename: "a\\b.json" }, 400, "invalid_input", /^filename: must be a file name/],
    ["a hidden filename", { filename: ".x.json" }, 400, "invalid_input", /^filename: must not start with '\.'$/],
    ["an empty filename", { filename: "" }, 400, "invalid_input", /^filename: must not be empty$/],
    ["a filename with a control character", { filename: "a\u0007.json" }, 400, "invalid_input", /^filename: must be a file name/],
    ["an outputFilename with a folder", { outputFilename: "out/x.csv" }, 400, "invalid_input", /^outputFilename: must be a file name/],
    ["an outputFilename of '..'", { outputFilename: ".." }, 400, "invalid_input", /^outputFilename: must not start with '\.'$/],
    ["an outputFilename with spaces around", { outputFilename: " x.csv" }, 400, "invalid_input", /^outputFilename: must not start or end with spaces$/],
    ["an outputFilename over 200 characters", { outputFilename: `${"x".repeat(201)}` }, 400, "invalid_input", /^outputFilename: must be at most 200 characters$/],
    ["an unknown outputFormat", { outputFormat: "pdf" }, 400, "invalid_input", /^outputFormat: must be one of csv, json, xml$/],
    ["an unknown format", { format: "xlsx" }, 400, "invalid_input", /^format: must be one of csv, json, xml$/],
    ["an unknown member", { colour: "red" }, 400, "invalid_input", /^colour: unknown member/],
  ];
  test.each(cases)("%s: %d, nothing created", async (_title, change, status, error, message) => {
    const before = await counts();
    const body: Record<string, unknown> = { ...VALID, ...change };
    for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
    expectError(await startUpload(h, ws, body), status, error, message);
    expect(await counts()).toEqual(before);
  });

  test("another workspace's connection and pipeline names are a 404 that does not repeat them", async () => {
    const r = await startUpload(h, other, VALID);
    expectError(r, 404, "not_found");
    expect(JSON.stringify(r.body)).not.toContain("Depot");
  });

  test("a body that is not an object, or not JSON", async () => {
    expectError(await startUpload(h, ws, [VALID] as never), 400, "invalid_input");
    expectError(await h.request("POST", "/outbound/uploads", { key: ws.apiKey, rawBody: "{nope", headers: { "content-type": "application/json" } }), 400, "invalid_input", /^body: malformed JSON/);
  });
});

describe("PUT /outbound/uploads/{uploadId}/parts/{partNumber}", () => {
  let id: string;
  beforeAll(async () => {
    id = await newUpload();
  });
  const row = [{ SKU: "a-1", Qty: "1" }];
  const stored = async () => (await h.ok(ws, "GET", `/outbound/uploads/${id}`)).partsReceived;

  test.each(["0", "3", "-1", "1.5", "abc", "1e0", "99999999"])("part number %s of 2: 400, nothing stored", async (n) => {
    expectError(await putPart(h, ws, id, n, row), 400, "invalid_input", /^partNumber: must be a whole number from 1 to 2 \(the upload's totalParts\)$/);
    expect(await stored()).toBe(0);
  });

  const bodies: [string, string, RegExp][] = [
    ["an object", '{"SKU":"a"}', /^body: must be a JSON array of row objects, not an object$/],
    ["a string", '"rows"', /^body: must be a JSON array of row objects, not a string$/],
    ["an empty body", "", /^body: must be a JSON array of row objects/],
    ["an array of numbers", "[1,2]", /^body\[0\]: must be a row object, not a number$/],
    ["an array with null", '[{"a":1},null]', /^body\[1\]: must be a row object, not null$/],
    ["an array of arrays", '[{"a":1},{"b":2},["x"]]', /^body\[2\]: must be a row object, not an array$/],
    ["malformed JSON", "[{", /^body: malformed JSON/],
  ];
  test.each(bodies)("%s: 400, nothing stored", async (_title, rawBody, message) => {
    expectError(await putPart(h, ws, id, 1, undefined, { rawBody }), 400, "invalid_input", message);
    expect(await stored()).toBe(0);
    expect(await keysUnder(h, `ws/${ws.workspaceId}/outbound-uploads/${id}/`)).toEqual([]);
  });

  test("a body that is not JSON: 415", async () => {
    const r = await h.request("PUT", `/outbound/uploads/${id}/parts/1`, { key: ws.apiKey, rawBody: "SKU\na-1\n", headers: { "content-type": "text/csv" } });
    expectError(r, 415, "unsupported_media_type", /^content-type: 'text\/csv' is not accepted here/);
    expect(await stored()).toBe(0);
  });

  test("a part over OUTBOUND_MAX_PART_BYTES: 413 naming the setting, nothing stored", async () => {
    const rows = Array.from({ length: 100 }, (_, i) => ({ SKU: `sku-${i}`, Qty: String(i), Name: "padding padding" }));
    expect(JSON.stringify(rows).length).toBeGreaterThan(MAX_PART);
    expectError(await putPart(h, ws, id, 1, rows), 413, "payload_too_large", /OUTBOUND_MAX_PART_BYTES/);
    expect(await stored()).toBe(0);
  });

  test("parts that together pass MAX_UPLOAD_BYTES: 413 for the part that would pass it", async () => {
    const big = await newUpload({ totalParts: 10 });
    const rows = Array.from({ length: 30 }, (_, i) => ({ SKU: `sku-${i}`, Qty: String(i), Name: "padding" }));
    let total = 0;
    let n = 1;
    for (;;) {
      const r = await putPart(h, ws, big, n, rows);
      if (r.status !== 200) {
        expectError(r, 413, "payload_too_large", /^body: the upload's parts together would pass the 8192-byte limit of one file \(MAX_UPLOAD_BYTES\)$/);
        break;
      }
      total += r.body.size;
      n++;
    }
    expect(total).toBeLessThanOrEqual(MAX_FILE);
    expect(n).toBeGreaterThan(2);
    expect((await h.ok(ws, "GET", `/outbound/uploads/${big}`)).partsReceived).toBe(n - 1);
    // Replacing a part counts its new size instead of the old one.
    expect((await putPart(h, ws, big, 1, [])).status).toBe(200);
    expect((await putPart(h, ws, big, n, rows)).status).toBe(200);
  });
});

describe("POST /outbound/uploads/{uploadId}/complete", () => {
  let id: string;
  beforeAll(async () => {
    id = await newUpload({ totalParts: 3 });
    for (const n of [1, 2]) expect((await putPart(h, ws, id, n, [{ SKU: `p-${n}`, Qty: "1" }])).status).toBe(200);
  });
  const p = (...ns: number[]) => ({ parts: ns.map((partNumber) => ({ partNumber })) });

  const cases: [string, unknown, RegExp][] = [
    ["fewer parts than totalParts", p(1, 2), /^parts: lists 2 parts; this upload has totalParts 3/],
    ["more parts than totalParts", p(1, 2, 3, 3), /^parts: lists 4 parts; this upload has totalParts 3/],
    ["no parts", { parts: [] }, /^parts: lists 0 parts/],
    ["a part listed twice", p(1, 2, 2), /^parts\[2\]\.partNumber: part 2 is listed twice$/],
    ["a part number out of range", p(1, 2, 4), /^parts\[2\]\.partNumber: must be from 1 to 3/],
    ["a part not received", p(3, 1, 2), /^parts: part 3 has not been received/],
    ["no parts member", {}, /^parts: is required$/],
    ["parts not an array", { parts: 3 }, /^parts: must be an array of \{partNumber\}$/],
    ["a part without a number", { parts: [{ partNumber: 1 }, { partNumber: 2 }, {}] }, /^parts\[2\]\.partNumber: is required$/],
    ["a part number as text", { parts: [{ partNumber: 1 }, { partNumber: 2 }, { partNumber: "3" }] }, /^parts\[2\]\.partNumber: must be a whole number$/],
    ["an unknown member in a part", { parts: [{ partNumber: 1, size: 3 }, { partNumber: 2 }, { partNumber: 3 }] }, /^parts\[0\]\.size: unknown member/],
  ];
  test.each(cases)("%s: 400, nothing started", async (_title, body, message) => {
    const before = await counts();
    expectError(await complete(h, ws, id, body), 400, "invalid_input", message);
    expect(await counts()).toEqual(before);
    expect((await h.ok(ws, "GET", `/outbound/uploads/${id}`)).status).toBe("initiated");
  });

  test("an etag that is not the part's current one: 400, nothing started", async () => {
    const two = await newUpload({ totalParts: 1 });
    const first = await putPart(h, ws, two, 1, [{ SKU: "v-1", Qty: "1" }]);
    await putPart(h, ws, two, 1, [{ SKU: "v-2", Qty: "2" }]);
    const before = await counts();
    expectError(await complete(h, ws, two, { parts: [{ partNumber: 1, etag: first.body.etag }] }), 400, "invalid_input", /^parts\[0\]\.etag: part 1 was replaced since/);
    expect(await counts()).toEqual(before);
  });

  test("an inactive pipeline: 409 and the session stays initiated; once active again it completes", async () => {
    const one = await newUpload({ totalParts: 1 });
    await putPart(h, ws, one, 1, [{ SKU: "i-1", Qty: "1" }]);
    await h.ok(ws, "PATCH", `/pipelines/${out.pipeline.id}`, { isActive: false });
    const before = await counts();
    expectError(await complete(h, ws, one, p(1)), 409, "conflict", /inactive/);
    expect(await counts()).toEqual(before);
    expect((await h.ok(ws, "GET", `/outbound/uploads/${one}`)).status).toBe("initiated");
    await h.ok(ws, "PATCH", `/pipelines/${out.pipeline.id}`, { isActive: true });
    expect((await complete(h, ws, one, p(1))).status).toBe(200);
  });

  test("a deleted pipeline: 409, the session fails and its parts are deleted", async () => {
    const gone = await outboundPipeline(h, ws, { connectionId: out.connection.id, name: "Short lived" });
    const r = await startUpload(h, ws, { connectionName: "Depot", pipelineName: "Short lived", totalParts: 1 });
    await putPart(h, ws, r.body.uploadId, 1, [{ SKU: "d-1", Qty: "1" }]);
    await h.ok(ws, "DELETE", `/pipelines/${gone.pipeline.id}`);
    const before = await counts();
    expectError(await complete(h, ws, r.body.uploadId, p(1)), 409, "conflict", /pipeline 'Short lived' was deleted before the upload was completed; nothing was started/);
    expect((await counts()).runs).toBe(before.runs);
    const s = await h.ok(ws, "GET", `/outbound/uploads/${r.body.uploadId}`);
    expect(s).toMatchObject({ status: "failed", errorMessage: expect.stringContaining("was deleted") });
    expect(await keysUnder(h, `ws/${ws.workspaceId}/outbound-uploads/${r.body.uploadId}/`)).toEqual([]);
    expectError(await putPart(h, ws, r.body.uploadId, 1, []), 409, "conflict", /failed: pipeline 'Short lived' was deleted/);
    expectError(await complete(h, ws, r.body.uploadId, p(1)), 409, "conflict");
  });

  test("a completed session takes no more parts: 409, and the part is not kept", async () => {
    const done = await newUpload({ totalParts: 1 });
    await putPart(h, ws, done, 1, [{ SKU: "c-1", Qty: "1" }]);
    expect((await complete(h, ws, done, p(1))).status).toBe(200);
    expectError(await putPart(h, ws, done, 1, [{ SKU: "late", Qty: "1" }]), 409, "conflict", /is already completed \(run 'run_/);
    expect(await keysUnder(h, `ws/${ws.workspaceId}/outbound-uploads/${done}/`)).toEqual([]);
  });
});

describe("another workspace's session", () => {
  let id: string;
  beforeAll(async () => {
    id = await newUpload({ totalParts: 1 });
    await putPart(h, ws, id, 1, [{ SKU: "o-1", Qty: "1" }]);
  });
  const untouched = async () => {
    const s = await h.ok(ws, "GET", `/outbound/uploads/${id}`);
    expect(s).toMatchObject({ status: "initiated", partsReceived: 1 });
    expect(s.parts[0].rowCount).toBe(1);
  };

  test("REST: 404 on status, parts and complete, and nothing changes", async () => {
    const as = (method: string, path: string, body?: unknown) => h.request(method, path, { key: other.apiKey, version: "2026-05-25", body });
    for (const r of [
      await as("GET", `/outbound/uploads/${id}`),
      await as("PUT", `/outbound/uploads/${id}/parts/1`, [{ SKU: "x" }, { SKU: "y" }]),
      await as("PUT", `/outbound/uploads/${id}/parts/99`, "not rows"),
      await as("POST", `/outbound/uploads/${id}/complete`, { parts: [{ partNumber: 1 }] }),
    ]) {
      expectError(r, 404, "not_found", `outbound upload '${id}' not found`);
    }
    expectError(await h.api(ws, "GET", "/outbound/uploads/upl_nope"), 404, "not_found", "outbound upload 'upl_nope' not found");
    await untouched();
  });

  test("GraphQL: NOT_FOUND with REST's message", async () => {
    const ops: [string, Record<string, unknown>][] = [
      ["query($id: ID!) { outboundUpload(uploadId: $id) { status } }", { id }],
      ["mutation($id: ID!) { putOutboundUploadPart(uploadId: $id, partNumber: 1, rows: []) { partNumber } }", { id }],
      ["mutation($id: ID!) { completeOutboundUpload(uploadId: $id, input: { parts: [{ partNumber: 1 }] }) { runId } }", { id }],
    ];
    for (const [op, vars] of ops) {
      const g = await h.graphql(other.apiKey, op, vars);
      expect(g.body.errors?.[0]?.message).toBe(`outbound upload '${id}' not found`);
      expect(g.body.errors?.[0]?.extensions).toEqual({ code: "NOT_FOUND", error: "not_found", statusCode: 404 , requestId: expect.any(String) });
    }
    const c = await h.graphql(other.apiKey, "mutation($i: CreateOutboundUploadInput!) { createOutboundUpload(input: $i) { uploadId } }", { i: VALID });
    expect(c.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    await untouched();
  });

  test("tRPC: NOT_FOUND with REST's message", async () => {
    const t = h.trpc(other);
    const calls = [
      () => t.outbound.get({ uploadId: id }),
      () => t.outbound.putPart({ uploadId: id, partNumber: 1, rows: [] }),
      () => t.outbound.complete({ uploadId: id, parts: [{ partNumber: 1 }] }),
      () => t.outbound.create(VALID),
    ];
    for (const call of calls) {
      const e = await call().then(
        () => null,
        (err) => err,
      );
      expect(e?.code).toBe("NOT_FOUND");
    }
    expect((await t.outbound.get({ uploadId: id }).catch((err) => err)).message).toBe(`outbound upload '${id}' not found`);
    await untouched();
  });
});

describe("GraphQL and tRPC refuse what REST refuses, with its message", () => {
  test("an inbound pipeline, a bad part and a short parts list", async () => {
    const rest = await startUpload(h, ws, { ...VALID, pipelineName: "Depot in" });
    const g = await h.graphql(ws.apiKey, "mutation($i: CreateOutboundUploadInput!) { createOutboundUpload(input: $i) { uploadId } }", { i: { ...VALID, pipelineName: "Depot in" } });
    expect(g.body.errors?.[0]?.message).toBe(rest.body.message);
    expect(g.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    const t = h.trpc(ws);
    expect((await t.outbound.create({ ...VALID, pipelineName: "Depot in" }).catch((e) => e)).message).toBe(rest.body.message);

    const id = await newUpload();
    const badRows = await h.graphql(ws.apiKey, "mutation($id: ID!) { putOutboundUploadPart(uploadId: $id, partNumber: 1, rows: {a: 1}) { partNumber } }", { id });
    expect(badRows.body.errors?.[0]?.message).toBe("body: must be a JSON array of row objects, not an object");
    expect((await t.outbound.putPart({ uploadId: id, partNumber: 3, rows: [] }).catch((e) => e)).message).toMatch(/^partNumber: must be a whole number from 1 to 2/);
    expect((await t.outbound.putPart({ uploadId: id, partNumber: 1, rows: [7] as never }).catch((e) => e)).message).toBe("body[0]: must be a row object, not a number");
    await putPart(h, ws, id, 1, []);
    const restShort = await complete(h, ws, id, [1]);
    const short = await h.graphql(ws.apiKey, "mutation($id: ID!) { completeOutboundUpload(uploadId: $id, input: { parts: [{ partNumber: 1 }] }) { runId } }", { id });
    expect(short.body.errors?.[0]?.message).toBe(restShort.body.message);
    expect((await t.outbound.complete({ uploadId: id, parts: [{ partNumber: 1 }] }).catch((e) => e)).message).toBe(restShort.body.message);
    expect((await t.outbound.get({} as never).catch((e) => e)).message).toBe("uploadId: is required");
  });
});
