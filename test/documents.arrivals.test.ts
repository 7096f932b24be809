import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Listening, listeningHarness, memberOf, MiB, putParts, putSingle, type Ticket } from "./helpers/documents";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, waitForRun } from "./helpers/runs";
import { startS3 } from "./helpers/s3";

/**
 * One rule for every door: a file an admin puts into a connection's inbound
 * folder through the documents API (a confirmed single upload, a completed
 * multipart upload, a move from outside the folder) starts the connection's
 * inbound pipelines as an SFTP arrival does, recorded as an arrival with
 * transport `documents`. Files elsewhere, refused writes and a second
 * confirmation of the same file start nothing. Jobs run in this process.
 */
let l: Listening;
let h: Harness;
let ws: TestWorkspace;
let conn: string;
let pipelineId: string;

beforeAll(async () => {
  // A lower single-upload limit makes a small file go multipart.
  l = await listeningHarness({ DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(64 * 1024) }, { startJobs: true });
  h = l.h;
  ws = await h.workspace();
  const fx = await createPipeline(h, ws, { connectionName: "Docs arrivals" });
  conn = fx.connection.id;
  pipelineId = fx.pipeline.id;
}, 30_000);
afterAll(() => l.close());

const ticket = (who: TestWorkspace, body: Record<string, unknown>) => h.api(who, "POST", "/documents/upload-url", { connectionId: conn, ...body });
const arrivals = async (): Promise<any[]> => (await h.ok(ws, "GET", `/connections/${conn}/arrivals?limit=100`)).data;

async function waitForArrivals(n: number): Promise<any[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const rows = await arrivals();
    if (rows.length >= n) return rows;
    if (Date.now() > deadline) throw new Error(`expected ${n} arrivals, have ${rows.length}: ${JSON.stringify(rows)}`);
    await Bun.sleep(25);
  }
}

/** A single upload PUT through its link (no confirmation yet). */
async function putFile(path: string, filename: string, body: string, force = true): Promise<Ticket> {
  const t = await ticket(ws, { path, filename, size: Buffer.byteLength(body), contentType: "text/csv", force });
  expect(t.status, JSON.stringify(t.body)).toBe(200);
  const res = await putSingle(t.body, body);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  return t.body;
}

describe("documents into the inbound folder start runs", () => {
  test("a confirmed single upload arrives: one run per active inbound pipeline, completed, the arrival recorded", async () => {
    await putFile("inbound", "items.csv", ITEMS_CSV);
    // PUT alone starts nothing: the confirmation is the arrival.
    await Bun.sleep(200);
    expect(await arrivals()).toHaveLength(0);
    const done = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/items.csv", force: true });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ path: "inbound/items.csv", size: ITEMS_CSV.length, protected: true });

    const [arrival] = await waitForArrivals(1);
    expect(arrival).toMatchObject({ transport: "documents", filename: "items.csv", path: "/inbound/items.csv", size: ITEMS_CSV.length, outcome: "started" });
    expect(arrival.runIds).toHaveLength(1);
    const run = await waitForRun(h, ws, arrival.runIds[0], ["completed", "failed"]);
    expect(run).toMatchObject({ status: "completed", pipelineId, filename: "items.csv" });
    expect(run.metadata).toMatchObject({ source: "upload", arrival: { actor: "key first admin key" }, rows: { total: 3, valid: 3 } });
  }, 30_000);

  test("confirming the same file again starts no second run (the runs' idempotency key: path, size and ETag)", async () => {
    const [first] = await arrivals();
    const again = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/items.csv", force: true });
    expect(again.status).toBe(200);
    const [second] = await waitForArrivals(2);
    expect(second).toMatchObject({ transport: "documents", outcome: "started", runIds: first.runIds });
    const runs = await h.ok(ws, "GET", `/pipeline-runs?pipelineId=${pipelineId}&limit=100`);
    expect(runs.data).toHaveLength(1);
  });

  test("a completed multipart upload arrives", async () => {
    const body = `SKU,Qty,Name\n${"d-4,4,Gear\n".repeat(8000)}`;
    const t = await ticket(ws, { path: "inbound", filename: "big.csv", size: body.length, contentType: "text/csv", force: true });
    expect(t.body.mode).toBe("multipart");
    const parts = await putParts(t.body, new TextEncoder().encode(body) as Uint8Array<ArrayBuffer>);
    const before = (await arrivals()).length;
    const done = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: t.body.path, uploadId: t.body.uploadId, parts, force: true });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const [arrival] = await waitForArrivals(before + 1);
    expect(arrival).toMatchObject({ transport: "documents", filename: "big.csv", size: body.length, outcome: "started" });
    const run = await waitForRun(h, ws, arrival.runIds[0], ["completed", "failed"], { timeoutMs: 30_000 });
    expect(run.status).toBe("completed");
    expect(run.metadata.rows).toMatchObject({ total: 8000, valid: 8000 });
  }, 40_000);

  test("a file moved into the inbound folder from outside arrives; renamed inside it, it does not arrive again", async () => {
    await putFile("staging", "moved.csv", ITEMS_CSV, false);
    const confirm = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "staging/moved.csv" });
    expect(confirm.status).toBe(200);
    await Bun.sleep(200);
    const before = (await arrivals()).length;
    // Outside the inbound folder a confirmed upload starts nothing.
    expect(before).toBe(3);

    const moved = await h.api(ws, "POST", "/documents/move", { connectionId: conn, from: "staging/moved.csv", to: "inbound/moved.csv", force: true });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const [arrival] = await waitForArrivals(before + 1);
    expect(arrival).toMatchObject({ transport: "documents", filename: "moved.csv", path: "/inbound/moved.csv", outcome: "started" });

    const renamed = await h.api(ws, "POST", "/documents/rename", { connectionId: conn, path: "inbound/moved.csv", name: "renamed.csv", force: true });
    expect(renamed.status).toBe(200);
    await Bun.sleep(300);
    expect(await arrivals()).toHaveLength(before + 1);
  }, 30_000);
});

describe("refusals start nothing", () => {
  test("confirming a path nothing was uploaded to is a 404; uploadId without parts a 400 naming parts", async () => {
    const before = (await arrivals()).length;
    const missing = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/never.csv", force: true });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe("path: nothing was uploaded to 'inbound/never.csv'; PUT the file to the ticket's url first");
    const half = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/x.csv", uploadId: "u1", force: true });
    expect(half.status).toBe(400);
    expect(half.body.message).toContain("parts: is required with uploadId");
    const other = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/x.csv", parts: [{ partNumber: 1, etag: "e" }], force: true });
    expect(other.status).toBe(400);
    expect(other.body.message).toContain("uploadId: is required with parts");
    expect(await arrivals()).toHaveLength(before);
  });

  test("without force a 409, a member with force a 403: no arrival", async () => {
    const before = (await arrivals()).length;
    const noForce = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/items.csv" });
    expect(noForce.status).toBe(409);
    const member = await memberOf(h, ws);
    const asMember = await h.api(member, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/items.csv", force: true });
    expect(asMember.status).toBe(403);
    await Bun.sleep(200);
    expect(await arrivals()).toHaveLength(before);
  });

  test("another workspace's key cannot confirm into this connection (404)", async () => {
    const other = await h.workspace();
    const r = await h.api(other, "POST", "/documents/upload-complete", { connectionId: conn, path: "inbound/items.csv", force: true });
    expect(r.status).toBe(404);
  });
});

describe("on S3 the same rule holds", () => {
  test("a single upload PUT to the bucket and confirmed, and a multipart one completed, each start a completed run", async () => {
    const s3 = await startS3();
    const s3l = await listeningHarness({ ...s3.env, DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(64 * 1024) }, { startJobs: true });
    try {
      const sh = s3l.h;
      const sws = await sh.workspace();
      const fx = await createPipeline(sh, sws, { connectionName: "S3 arrivals" });
      const c = fx.connection.id;
      const list = async (): Promise<any[]> => (await sh.ok(sws, "GET", `/connections/${c}/arrivals?limit=100`)).data;
      const until = async (n: number) => {
        const deadline = Date.now() + 20_000;
        while ((await list()).length < n) {
          if (Date.now() > deadline) throw new Error(`expected ${n} arrivals: ${JSON.stringify(await list())}`);
          await Bun.sleep(25);
        }
        return list();
      };

      const t = await sh.ok<Ticket>(sws, "POST", "/documents/upload-url", { connectionId: c, path: "inbound", filename: "s3.csv", size: ITEMS_CSV.length, contentType: "text/csv", force: true });
      expect(t.url).toStartWith(`${s3.endpoint}/`);
      expect((await putSingle(t, ITEMS_CSV)).status).toBe(200);
      await sh.ok(sws, "POST", "/documents/upload-complete", { connectionId: c, path: t.path, force: true });
      const [single] = await until(1);
      expect(single).toMatchObject({ transport: "documents", filename: "s3.csv", outcome: "started" });
      expect((await waitForRun(sh, sws, single.runIds[0], ["completed", "failed"])).status).toBe("completed");

      const body = `SKU,Qty,Name\n${"e-5,5,Spring\n".repeat(7000)}`;
      const m = await sh.ok<Ticket>(sws, "POST", "/documents/upload-url", { connectionId: c, path: "inbound", filename: "s3-big.csv", size: body.length, contentType: "text/csv", force: true });
      expect(m.mode).toBe("multipart");
      const parts = await putParts(m, new TextEncoder().encode(body) as Uint8Array<ArrayBuffer>);
      await sh.ok(sws, "POST", "/documents/upload-complete", { connectionId: c, path: m.path, uploadId: m.uploadId, parts, force: true });
      const [multi] = await until(2);
      expect(multi).toMatchObject({ transport: "documents", filename: "s3-big.csv", outcome: "started" });
      const run = await waitForRun(sh, sws, multi.runIds[0], ["completed", "failed"], { timeoutMs: 30_000 });
      expect(run.metadata.rows).toMatchObject({ total: 7000, valid: 7000 });
    } finally {
      await s3l.close();
      await s3.stop();
    }
  }, 60_000);
});
