import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jobDefinitions } from "../src/jobs/definitions";
import { sweepLocalStorage } from "../src/services/documents";
import { connectionWith, download, type Listening, listeningHarness, MiB, md5, pattern, putParts, putSingle, type Ticket, unquote } from "./helpers/documents";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { startS3, type TestS3 } from "./helpers/s3";

/**
 * The documents API unchanged on S3 (s3rver on loopback, S3_* settings): the
 * tickets' links point at the bucket and are used there with plain fetch.
 * s3rver does not check signatures; those are tested on the local store.
 */
let s3: TestS3;
let l: Listening;
let h: Harness;
let ws: TestWorkspace;
let conn: string;

beforeAll(async () => {
  s3 = await startS3();
  l = await listeningHarness({ ...s3.env, DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(8 * MiB) });
  h = l.h;
  ws = await h.workspace();
  conn = await connectionWith(h, ws, "S3 partner", ["inbound"]);
});
afterAll(async () => {
  await l.close();
  await s3.stop();
});

const q = (o: Record<string, string>) => new URLSearchParams(o).toString();
const names = async (path: string) =>
  ((await h.ok(ws, "GET", `/documents?${q({ connectionId: conn, path })}`)).entries as { kind: string; name: string }[]).map(
    (e) => `${e.kind === "folder" ? "d" : "f"}:${e.name}`,
  );

describe("documents on S3", () => {
  test("the service stores in the bucket", () => {
    expect(h.svc.storage.kind).toBe("s3");
  });

  test("single upload through the bucket's presigned PUT, then metadata and a presigned download", async () => {
    const body = "sku,qty\nA-1,3\n";
    const t = await h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, path: "drop", filename: "stock.csv", size: body.length, contentType: "text/csv" });
    expect(t).toMatchObject({ mode: "single", path: "drop/stock.csv", headers: { "content-type": "text/csv" } });
    expect(t.url).toStartWith(`${s3.endpoint}/`);
    const res = await putSingle(t, body);
    expect(res.status).toBe(200);
    expect(unquote(res.headers.get("etag"))).toBe(md5(body));
    expect(await h.ok(ws, "GET", `/documents/object?${q({ connectionId: conn, path: "drop/stock.csv" })}`)).toMatchObject({
      size: body.length,
      etag: md5(body),
      contentType: "text/csv",
    });
    const link = await h.ok(ws, "GET", `/documents/download-url?${q({ connectionId: conn, path: "drop/stock.csv" })}`);
    expect(link.url).toStartWith(`${s3.endpoint}/`);
    expect(link).toMatchObject({ filename: "stock.csv", mimetype: "text/csv" });
    const got = await download(link.url);
    expect(got.status).toBe(200);
    expect(new TextDecoder().decode(got.bytes)).toBe(body);
  });

  test("multipart in 2 parts through presigned part URLs, completed with the ETags", async () => {
    const body = pattern(8 * MiB + 4321, 11);
    const t = await h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, path: "drop", filename: "big.bin", size: body.length });
    expect(t).toMatchObject({ mode: "multipart", partSize: 8 * MiB });
    expect(t.parts!.length).toBe(2);
    expect(t.parts![0]!.url).toStartWith(`${s3.endpoint}/`);
    const parts = await putParts(t, body);
    const done = await h.ok(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: t.path, uploadId: t.uploadId, parts });
    expect(done).toMatchObject({ path: "drop/big.bin", size: body.length });
    const link = await h.ok(ws, "GET", `/documents/download-url?${q({ connectionId: conn, path: "drop/big.bin" })}`);
    const got = await download(link.url);
    expect(md5(got.bytes)).toBe(md5(body));
  });

  test("abort answers aborted and the upload cannot be completed", async () => {
    const t = await h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, filename: "gone.bin", size: 9 * MiB });
    expect(await h.ok(ws, "POST", "/documents/upload-abort", { connectionId: conn, path: t.path, uploadId: t.uploadId })).toEqual({ aborted: true });
    const r = await h.api(ws, "POST", "/documents/upload-complete", {
      connectionId: conn,
      path: t.path,
      uploadId: t.uploadId,
      parts: [{ partNumber: 1, etag: "0".repeat(32) }],
    });
    // S3 answers NoSuchUpload (404, as on local disk); s3rver answers InternalError (500) for an upload it no longer has.
    expect(r.status).not.toBe(200);
    expect((await h.api(ws, "GET", `/documents/object?${q({ connectionId: conn, path: "gone.bin" })}`)).status).toBe(404);
  });

  test("folders, browse, move, delete and bulk delete behave as on local disk", async () => {
    await h.ok(ws, "POST", "/documents/folders", { connectionId: conn, path: "tree/empty" });
    for (const p of ["tree/a.txt", "tree/sub/b.txt"]) {
      const slash = p.lastIndexOf("/");
      const t = await h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, path: p.slice(0, slash), filename: p.slice(slash + 1), size: 1 });
      expect((await putSingle(t, "x")).status).toBe(200);
    }
    expect(await names("tree")).toEqual(["f:a.txt", "d:empty", "d:sub"]);
    expect(await names("tree/empty")).toEqual([]);
    const root = await h.ok(ws, "GET", `/documents?${q({ connectionId: conn })}`);
    expect(root.entries.find((e: { name: string }) => e.name === "inbound")).toMatchObject({ kind: "folder", protected: true });

    expect((await h.ok(ws, "POST", "/documents/move", { connectionId: conn, from: "tree/sub", to: "moved/sub" })).objects).toBe(1);
    expect(await names("tree")).toEqual(["f:a.txt", "d:empty"]);
    expect(await names("moved/sub")).toEqual(["f:b.txt"]);
    // S3 would hold a file and a folder of one name; the service refuses it as the local store does.
    const clash = await h.api(ws, "POST", "/documents/upload-url", { connectionId: conn, path: "moved", filename: "sub", size: 1 });
    expect(clash.status).toBe(409);
    expect((await h.api(ws, "POST", "/documents/folders", { connectionId: conn, path: "tree/a.txt" })).status).toBe(409);

    const bulk = await h.ok(ws, "POST", "/documents/bulk-delete", { connectionId: conn, paths: ["tree/a.txt", "moved", "nope"] });
    expect(bulk).toMatchObject({ deleted: 2, failed: 1 });
    expect(await names("tree")).toEqual(["d:empty"]);
    expect((await h.api(ws, "GET", `/documents?${q({ connectionId: conn, path: "moved" })}`)).status).toBe(404);
    expect((await h.ok(ws, "DELETE", `/documents/folder?${q({ connectionId: conn, path: "tree" })}`)).objects).toBe(1);
  });

  test("the inbound folder is protected here too", async () => {
    const r = await h.api(ws, "POST", "/documents/upload-url", { connectionId: conn, path: "inbound", filename: "x.csv", size: 1 });
    expect(r.status).toBe(409);
  });

  test("the hourly sweep is scheduled (for runs never recorded), and its local part does nothing", async () => {
    expect(jobDefinitions(h.svc).crons.map((c) => c.name)).toContain("storage.sweep");
    expect(await sweepLocalStorage(h.svc, 0)).toBe(0);
  });
});
