import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { expectError } from "./helpers/expect";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, type PipelineFixture, runToEnd, uploadFile, waitForRun } from "./helpers/runs";

const MAX_UPLOAD = 4096;

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
let fx: PipelineFixture;
let run: any;

/** Every file under the object store's root, its bookkeeping (temp files) included. */
const storedFiles = () => {
  try {
    return (readdirSync(join(h.dataDir, "objects"), { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[])
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name));
  } catch {
    return [];
  }
};

beforeAll(async () => {
  h = await Harness.start({ env: { MAX_UPLOAD_BYTES: String(MAX_UPLOAD) } });
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
  fx = await createPipeline(h, ws);
  run = await runToEnd(h, ws, fx.pipeline.id);
});

afterAll(async () => {
  await h.close();
});

describe("unknown ids and other workspaces are 404 on every route", () => {
  test("unknown run id", async () => {
    expectError(await h.api(ws, "GET", "/pipeline-runs/run_nope"), 404, "not_found", /pipeline run 'run_nope' not found/);
    expectError(await h.api(ws, "PATCH", "/pipeline-runs/run_nope/status", { status: "acknowledged" }), 404, "not_found");
    expectError(await h.api(ws, "POST", "/pipeline-runs/run_nope/retry"), 404, "not_found");
    expectError(await h.api(ws, "GET", "/pipeline-runs/pipeline/pipe_nope"), 404, "not_found", /pipeline 'pipe_nope' not found/);
    expectError(await uploadFile(h, ws, "pipe_nope", { name: "a.csv", content: ITEMS_CSV }), 404, "not_found");
  });

  test("another workspace's run and pipeline", async () => {
    expectError(await h.api(other, "GET", `/pipeline-runs/${run.id}`), 404, "not_found");
    expectError(await h.api(other, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" }), 404, "not_found");
    expectError(await h.api(other, "POST", `/pipeline-runs/${run.id}/retry`), 404, "not_found");
    expectError(await h.api(other, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}`), 404, "not_found");
    expectError(await uploadFile(h, other, fx.pipeline.id, { name: "a.csv", content: ITEMS_CSV }), 404, "not_found");
    const list = await h.ok(other, "GET", "/pipeline-runs");
    expect(list.pagination.total).toBe(0);
    const filtered = await h.ok(other, "GET", `/pipeline-runs?pipelineId=${fx.pipeline.id}`);
    expect(filtered.data).toEqual([]);
    // Nothing moved.
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe(run.status);
  });

  test("/pipeline-runs/delta is the delta route, not a run called 'delta'", async () => {
    const res = await h.api(ws, "GET", "/pipeline-runs/delta");
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/baseRunId/);
  });

  test("no key is a 401 before anything is read", async () => {
    expectError(await h.request("GET", "/pipeline-runs"), 401, "unauthorized");
    expectError(await uploadFile(h, ws, fx.pipeline.id, { name: "a.csv", content: ITEMS_CSV }, { key: null }), 401, "unauthorized");
  });
});

describe("acknowledge input", () => {
  test("a status other than acknowledged is a 400 naming status, and changes nothing", async () => {
    for (const status of ["completed", "failed", "pending", "ACKNOWLEDGED", 1, null]) {
      const res = await h.api(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status });
      expectError(res, 400, "invalid_input", /^status: /);
    }
    expectError(await h.api(ws, "PATCH", `/pipeline-runs/${run.id}/status`, {}), 400, "invalid_input", "status: is required");
    expectError(
      await h.api(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged", note: "x" }),
      400,
      "invalid_input",
      /note: unknown member/,
    );
    expectError(
      await h.request("PATCH", `/pipeline-runs/${run.id}/status`, { key: ws.apiKey, rawBody: "{", headers: { "content-type": "application/json" } }),
      400,
      "invalid_input",
      /malformed JSON/,
    );
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("completed");
  });
});

describe("retry", () => {
  test("only a failed run can be retried: 409 otherwise, nothing changes", async () => {
    const res = await h.api(ws, "POST", `/pipeline-runs/${run.id}/retry`);
    expectError(res, 409, "conflict", /only a failed run can be retried; run '.+' is completed/);
    const after = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
    expect(after).toEqual(run);
  });
});

describe("list queries", () => {
  const bad: [string, RegExp][] = [
    ["status=done", /^status: must be one of pending, processing/],
    ["direction=sideways", /^direction: must be one of inbound, outbound/],
    ["page=0", /^page: must be at least 1/],
    ["limit=101", /^limit: must be at most 100/],
    ["limit=abc", /^limit: /],
    ["from=yesterday", /^from: must be an ISO 8601 date or date-time/],
    ["to=2026-13-45", /^to: /],
    ["from=2026-05-02&to=2026-05-01T00:00:00Z", /^to: must not be before from/],
  ];
  for (const [query, message] of bad) {
    test(`GET /pipeline-runs?${query} is a 400 naming the parameter`, async () => {
      expectError(await h.api(ws, "GET", `/pipeline-runs?${query}`), 400, "invalid_input", message);
      expectError(await h.api(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}?${query}`), 400, "invalid_input", message);
    });
  }
});

describe("uploads", () => {
  test("a form without a file field is a 400 naming file", async () => {
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "a.csv", content: ITEMS_CSV }, { field: "document" });
    expectError(res, 400, "invalid_input", "file: is required; send the file as multipart/form-data in the field 'file'");
  });

  test("file sent as a plain form field is a 400 naming file", async () => {
    const form = new FormData();
    form.append("file", "SKU,Qty\na,1\n");
    const res = await h.service.http.handle(
      new Request(`http://localhost/pipelines/${fx.pipeline.id}/runs`, {
        method: "POST",
        headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25" },
        body: form,
      }),
    );
    expectError({ status: res.status, headers: res.headers, body: await res.json() }, 400, "invalid_input", /^file: must be a file part/);
  });

  test("a body that is not multipart is a 415; JSON is not taken either", async () => {
    const asJson = await h.request("POST", `/pipelines/${fx.pipeline.id}/runs`, { key: ws.apiKey, body: { file: "SKU\n" } });
    expectError(asJson, 415, "unsupported_media_type", /send multipart\/form-data with the file in the field 'file'/);
    const raw = await h.request("POST", `/pipelines/${fx.pipeline.id}/runs`, {
      key: ws.apiKey,
      rawBody: ITEMS_CSV,
      headers: { "content-type": "text/csv" },
    });
    expectError(raw, 415, "unsupported_media_type");
    const noBoundary = await h.request("POST", `/pipelines/${fx.pipeline.id}/runs`, {
      key: ws.apiKey,
      rawBody: "x",
      headers: { "content-type": "multipart/form-data" },
    });
    expect(noBoundary.status).toBeOneOf([400, 415]);
  });

  test("a malformed multipart body is a 400", async () => {
    const res = await h.request("POST", `/pipelines/${fx.pipeline.id}/runs`, {
      key: ws.apiKey,
      rawBody: "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\nSKU\n",
      headers: { "content-type": "multipart/form-data; boundary=xyz" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_input");
  });

  test("too large an upload is a 413 and nothing is kept, neither a run nor a stored object", async () => {
    const before = await h.ok(ws, "GET", "/pipeline-runs");
    const filesBefore = storedFiles();
    const big = `SKU,Qty,Name\n${"a,1,x\n".repeat(MAX_UPLOAD / 6 + 10)}`;
    expect(big.length).toBeGreaterThan(MAX_UPLOAD);
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "big.csv", content: big });
    expectError(res, 413, "payload_too_large", `file: larger than the ${MAX_UPLOAD}-byte upload limit`);
    const after = await h.ok(ws, "GET", "/pipeline-runs");
    expect(after.pagination.total).toBe(before.pagination.total);
    expect(storedFiles()).toEqual(filesBefore);
  });

  test("a file just under the limit is taken", async () => {
    const body = `SKU,Qty,Name\n${"a,1,x\n".repeat(Math.floor((MAX_UPLOAD - 20) / 6))}`;
    expect(body.length).toBeLessThanOrEqual(MAX_UPLOAD);
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "fits.csv", content: body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.size).toBe(body.length);
    await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
  });

  test("an upload cut off mid-file keeps nothing", async () => {
    const before = await h.ok(ws, "GET", "/pipeline-runs");
    const filesBefore = storedFiles();
    const head = new TextEncoder().encode(
      '--cut\r\nContent-Disposition: form-data; name="file"; filename="cut.csv"\r\nContent-Type: text/csv\r\n\r\nSKU,Qty\na,1\n',
    );
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(head);
        await Bun.sleep(20);
        controller.error(new Error("client went away"));
      },
    });
    const res = await h.service.http.handle(
      new Request(`http://localhost/pipelines/${fx.pipeline.id}/runs`, {
        method: "POST",
        headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25", "content-type": "multipart/form-data; boundary=cut" },
        body,
      }),
    );
    expect(res.status).toBe(400);
    expect((await res.json()).message).toMatch(/^body: the upload ended before the form was complete/);
    expect((await h.ok(ws, "GET", "/pipeline-runs")).pagination.total).toBe(before.pagination.total);
    expect(storedFiles()).toEqual(filesBefore);
  });

  test("an inactive pipeline is a 409; nothing is stored", async () => {
    const inactive = await createPipeline(h, ws, { isActive: false });
    const filesBefore = storedFiles();
    const res = await uploadFile(h, ws, inactive.pipeline.id, { name: "a.csv", content: ITEMS_CSV });
    expectError(res, 409, "conflict", /is inactive/);
    expect(storedFiles()).toEqual(filesBefore);
    // Refused before the body is looked at.
    const unread = await h.request("POST", `/pipelines/${inactive.pipeline.id}/runs`, { key: ws.apiKey, rawBody: "x", headers: { "content-type": "text/csv" } });
    expectError(unread, 409, "conflict");
  });

  test("an outbound pipeline is a 400: its data enters through outbound uploads", async () => {
    const outbound = await createPipeline(h, ws, { direction: "outbound" });
    const res = await uploadFile(h, ws, outbound.pipeline.id, { name: "a.csv", content: ITEMS_CSV });
    expectError(res, 400, "invalid_input", /is outbound; its data enters through outbound uploads/);
    const runs = await h.ok(ws, "GET", `/pipeline-runs/pipeline/${outbound.pipeline.id}`);
    expect(runs.pagination.total).toBe(0);
  });
});
