import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { utimesSync } from "node:fs";
import { join } from "node:path";
import { jobDefinitions } from "../src/jobs/definitions";
import { sweepLocalStorage } from "../src/services/documents";
import { spaceKey } from "../src/services/spaces";
import {
  connectionWith,
  download,
  type Listening,
  listeningHarness,
  MiB,
  md5,
  pattern,
  putParts,
  putSingle,
  type Ticket,
  unquote,
} from "./helpers/documents";
import type { Harness, TestWorkspace } from "./helpers/harness";

/**
 * The documents API on the local store: uploads through presigned links with
 * plain fetch (single and a 2-part multipart), browse, metadata, download,
 * folders, move/rename, delete and bulk delete, and the same operations on
 * GraphQL and tRPC. The single-upload limit is lowered to 8 MiB so that a
 * 2-part multipart (8 MiB + the rest) stays small.
 */
let l: Listening;
let h: Harness;
let ws: TestWorkspace;
let conn: string;

beforeAll(async () => {
  l = await listeningHarness({ DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(8 * MiB) });
  h = l.h;
  ws = await h.workspace();
  conn = await connectionWith(h, ws, "Docs partner");
});
afterAll(() => l.close());

const ticket = (body: Record<string, unknown>) => h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, ...body });
const list = (path = "", extra = "") => h.api(ws, "GET", `/documents?connectionId=${conn}&path=${encodeURIComponent(path)}${extra}`);
const names = async (path = "") => {
  const r = await list(path);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.entries as { name: string; kind: string }[]).map((e) => `${e.kind === "folder" ? "d" : "f"}:${e.name}`);
};
async function put(path: string, body: string, contentType = "text/plain") {
  const slash = path.lastIndexOf("/");
  const t = await ticket({ path: slash < 0 ? "" : path.slice(0, slash), filename: path.slice(slash + 1), size: Buffer.byteLength(body), contentType });
  const res = await putSingle(t, body);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

describe("uploads through presigned links", () => {
  test("single: one PUT of the whole file with the ticket's headers; metadata and download give it back", async () => {
    const body = "id,name\n1,Ada\n2,Grace\n";
    const t = await ticket({ path: "reports/2026", filename: "people.csv", size: body.length, contentType: "text/csv" });
    expect(t).toMatchObject({ mode: "single", path: "reports/2026/people.csv", headers: { "content-type": "text/csv" }, expiresIn: 3600 });
    expect(t.url).toStartWith(`${l.origin}/storage/o/`);
    expect(t.uploadId).toBeUndefined();
    // Not yet uploaded: no object.
    expect((await h.api(ws, "GET", `/documents/object?connectionId=${conn}&path=reports/2026/people.csv`)).status).toBe(404);

    const res = await putSingle(t, body);
    expect(res.status).toBe(200);
    expect(unquote(res.headers.get("etag"))).toBe(md5(body));

    const meta = await h.ok(ws, "GET", `/documents/object?connectionId=${conn}&path=reports/2026/people.csv`);
    expect(meta).toMatchObject({ path: "reports/2026/people.csv", name: "people.csv", size: body.length, etag: md5(body), contentType: "text/csv", protected: false });
    expect(Date.parse(meta.updatedAt)).not.toBeNaN();

    const link = await h.ok(ws, "GET", `/documents/download-url?connectionId=${conn}&path=reports/2026/people.csv`);
    expect(link).toMatchObject({ filename: "people.csv", expiresIn: 3600, mimetype: "text/csv" });
    const got = await download(link.url);
    expect(got.status).toBe(200);
    expect(new TextDecoder().decode(got.bytes)).toBe(body);
    expect(got.headers.get("content-disposition")).toContain('filename="people.csv"');
    // The bytes are where the hosted SFTP server will look for them.
    expect((await h.svc.storage.stat(spaceKey(ws.workspaceId, conn, "reports/2026/people.csv")))?.size).toBe(body.length);
  });

  test("the content type defaults from the file name; an empty file is a single upload too", async () => {
    const t = await ticket({ filename: "empty.json", size: 0 });
    expect(t.mode).toBe("single");
    expect(t.headers["content-type"]).toStartWith("application/json");
    const res = await putSingle(t, "");
    expect(res.status).toBe(200);
    expect(await h.ok(ws, "GET", `/documents/object?connectionId=${conn}&path=empty.json`)).toMatchObject({ size: 0, etag: md5("") });
  });

  test("multipart in 2 parts (8 MiB and the rest), sent out of order, completed with the ETags, is one object", async () => {
    const body = pattern(8 * MiB + 1234, 7);
    const t = await ticket({ path: "big", filename: "blob.bin", size: body.length, contentType: "application/octet-stream" });
    expect(t).toMatchObject({ mode: "multipart", path: "big/blob.bin", partSize: 8 * MiB, headers: {} });
    expect(t.url).toBeUndefined();
    expect(t.parts!.map((p) => p.partNumber)).toEqual([1, 2]);
    const parts = await putParts(t, body, [2, 1]);
    expect(unquote(parts[0]!.etag)).toBe(md5(body.subarray(0, 8 * MiB)));
    // Parts alone are not an object.
    expect((await h.api(ws, "GET", `/documents/object?connectionId=${conn}&path=big/blob.bin`)).status).toBe(404);

    const done = await h.ok(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: t.path, uploadId: t.uploadId, parts });
    expect(done).toMatchObject({ path: "big/blob.bin", size: body.length, contentType: "application/octet-stream" });
    expect(done.etag).toEndWith("-2");
    const link = await h.ok(ws, "GET", `/documents/download-url?connectionId=${conn}&path=big/blob.bin`);
    const got = await download(link.url);
    expect(got.bytes.length).toBe(body.length);
    expect(md5(got.bytes)).toBe(md5(body));
    // Completing again: the upload is gone.
    expect((await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: t.path, uploadId: t.uploadId, parts })).status).toBe(404);
  });

  test("the part size grows so that parts stay within 10,000 (S3's limit), in whole MiB, never under 8 MiB", async () => {
    const { partSizeFor } = await import("../src/services/documents");
    expect(partSizeFor(65 * MiB)).toBe(8 * MiB);
    expect(partSizeFor(80_000 * MiB)).toBe(8 * MiB);
    expect(partSizeFor(80_000 * MiB + 1)).toBe(9 * MiB);
    const huge = 4.9 * 1024 ** 4;
    expect(Math.ceil(huge / partSizeFor(huge))).toBeLessThanOrEqual(10_000);
    // A 1 GiB ticket: 128 parts of 8 MiB.
    const t = await ticket({ filename: "gig.bin", size: 1024 * MiB });
    expect(t.parts!.length).toBe(128);
    expect(t.partSize).toBe(8 * MiB);
    expect((await h.ok(ws, "POST", "/documents/upload-abort", { connectionId: conn, path: t.path, uploadId: t.uploadId })).aborted).toBe(true);
  });

  test("abort removes the parts: completion and further part PUTs are refused, the object never appears", async () => {
    const body = pattern(9 * MiB, 3);
    const t = await ticket({ filename: "aborted.bin", size: body.length });
    const first = await fetch(t.parts![0]!.url, { method: "PUT", body: body.subarray(0, 8 * MiB) });
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect(await h.ok(ws, "POST", "/documents/upload-abort", { connectionId: conn, path: t.path, uploadId: t.uploadId })).toEqual({ aborted: true });
    const late = await fetch(t.parts![1]!.url, { method: "PUT", body: body.subarray(8 * MiB) });
    expect(late.status).toBe(404);
    const complete = await h.api(ws, "POST", "/documents/upload-complete", {
      connectionId: conn,
      path: t.path,
      uploadId: t.uploadId,
      parts: [{ partNumber: 1, etag }],
    });
    expect(complete.status).toBe(404);
    expect((await h.api(ws, "GET", `/documents/object?connectionId=${conn}&path=aborted.bin`)).status).toBe(404);
    // Aborting again is harmless.
    expect((await h.ok(ws, "POST", "/documents/upload-abort", { connectionId: conn, path: t.path, uploadId: t.uploadId })).aborted).toBe(true);
  });

  test("an upload id is bound to its path: completing it under another path is a 404", async () => {
    const body = pattern(8 * MiB + 10, 4);
    const t = await ticket({ filename: "bound.bin", size: body.length });
    const parts = await putParts(t, body);
    const other = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: "elsewhere.bin", uploadId: t.uploadId, parts });
    expect(other.status).toBe(404);
    expect((await h.api(ws, "GET", `/documents/object?connectionId=${conn}&path=elsewhere.bin`)).status).toBe(404);
    expect((await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: t.path, uploadId: t.uploadId, parts })).status).toBe(200);
  });

  test("a re-uploaded object replaces the old one", async () => {
    await put("notes/replace.txt", "first");
    await put("notes/replace.txt", "second!");
    expect(await h.ok(ws, "GET", `/documents/object?connectionId=${conn}&path=notes/replace.txt`)).toMatchObject({ size: 7, etag: md5("second!") });
  });
});

describe("browse", () => {
  beforeAll(async () => {
    for (const p of ["browse/b.txt", "browse/a.txt", "browse/sub/deep/x.txt", "browse/c d é.txt"]) await put(p, `content of ${p}`);
    await h.ok(ws, "POST", "/documents/folders", { connectionId: conn, path: "browse/empty" });
  });

  test("lists folders and objects directly inside, in key order; an empty folder lists nothing (its marker is hidden)", async () => {
    expect(await names("browse")).toEqual(["f:a.txt", "f:b.txt", "f:c d é.txt", "d:empty", "d:sub"]);
    expect(await names("browse/empty")).toEqual([]);
    expect(await names("browse/sub")).toEqual(["d:deep"]);
    const r = await list("browse");
    const a = r.body.entries[0];
    expect(a).toMatchObject({ kind: "object", path: "browse/a.txt", size: "content of browse/a.txt".length, contentType: "text/plain", protected: false });
    expect(r.body.entries[3]).toEqual({ kind: "folder", path: "browse/empty", name: "empty", protected: false });
    expect(r.body).toMatchObject({ connectionId: conn, path: "browse", nextCursor: null });
  });

  test("the root always shows inbound and outbound, even while they are empty", async () => {
    const root = await names("");
    for (const n of ["d:inbound", "d:outbound", "d:browse", "d:reports", "f:empty.json"]) expect(root).toContain(n);
    expect(await names("inbound")).toEqual([]);
  });

  test("paging by cursor gives every entry once, in the same order", async () => {
    for (const path of ["browse", ""]) {
      const all = (await list(path)).body.entries.map((e: { path: string }) => e.path);
      const paged: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 50; i++) {
        const r = await list(path, `&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.entries.length).toBeLessThanOrEqual(2);
        paged.push(...r.body.entries.map((e: { path: string }) => e.path));
        cursor = r.body.nextCursor;
        if (!cursor) break;
      }
      expect(paged).toEqual(all);
    }
  });

  test("a folder that does not exist, or a file, is a 404", async () => {
    expect((await list("browse/nope")).status).toBe(404);
    expect((await list("browse/a.txt")).status).toBe(404);
  });
});

describe("folders, move, rename, delete", () => {
  test("create folder: parents come with it; creating it again changes nothing", async () => {
    expect(await h.ok(ws, "POST", "/documents/folders", { connectionId: conn, path: "tree/one/two" })).toEqual({ path: "tree/one/two", created: true, protected: false });
    expect(await h.ok(ws, "POST", "/documents/folders", { connectionId: conn, path: "tree/one/two" })).toMatchObject({ created: false });
    expect(await names("tree")).toEqual(["d:one"]);
    expect(await names("tree/one/two")).toEqual([]);
  });

  test("move and rename an object; its old folder stays", async () => {
    await put("mv/src/file.txt", "moving");
    expect(await h.ok(ws, "POST", "/documents/move", { connectionId: conn, from: "mv/src/file.txt", to: "mv/dst/moved.txt" })).toEqual({
      kind: "object",
      from: "mv/src/file.txt",
      to: "mv/dst/moved.txt",
      objects: 1,
    });
    expect(await names("mv/src")).toEqual([]);
    expect(await names("mv/dst")).toEqual(["f:moved.txt"]);
    expect(await h.ok(ws, "POST", "/documents/rename", { connectionId: conn, path: "mv/dst/moved.txt", name: "renamed.txt" })).toMatchObject({
      to: "mv/dst/renamed.txt",
    });
    const meta = await h.ok(ws, "GET", `/documents/object?connectionId=${conn}&path=mv/dst/renamed.txt`);
    expect(meta).toMatchObject({ size: 6, etag: md5("moving") });
  });

  test("move and rename a folder with everything in it, empty subfolders included", async () => {
    await put("fold/a/1.txt", "one");
    await put("fold/a/deep/2.txt", "two");
    await h.ok(ws, "POST", "/documents/folders", { connectionId: conn, path: "fold/a/empty" });
    const moved = await h.ok(ws, "POST", "/documents/move", { connectionId: conn, from: "fold/a", to: "fold/b/c" });
    expect(moved).toMatchObject({ kind: "folder", from: "fold/a", to: "fold/b/c", objects: 3 });
    expect(await names("fold")).toEqual(["d:b"]);
    expect(await names("fold/b/c")).toEqual(["f:1.txt", "d:deep", "d:empty"]);
    await h.ok(ws, "POST", "/documents/rename", { connectionId: conn, path: "fold/b/c", name: "z" });
    expect(await names("fold/b")).toEqual(["d:z"]);
    expect(await h.ok(ws, "GET", `/documents/object?connectionId=${conn}&path=fold/b/z/deep/2.txt`)).toMatchObject({ etag: md5("two") });
  });

  test("a move onto an existing path is a 409, into itself a 400, from nowhere a 404; nothing moves", async () => {
    await put("mvx/a.txt", "a");
    await put("mvx/b.txt", "b");
    expect((await h.api(ws, "POST", "/documents/move", { connectionId: conn, from: "mvx/a.txt", to: "mvx/b.txt" })).status).toBe(409);
    const self = await h.api(ws, "POST", "/documents/move", { connectionId: conn, from: "mvx", to: "mvx/inner" });
    expect(self.status).toBe(400);
    expect(self.body.message).toContain("to:");
    expect((await h.api(ws, "POST", "/documents/move", { connectionId: conn, from: "mvx/none.txt", to: "mvx/c.txt" })).status).toBe(404);
    expect((await h.api(ws, "POST", "/documents/rename", { connectionId: conn, path: "mvx/a.txt", name: "b.txt" })).status).toBe(409);
    expect(await names("mvx")).toEqual(["f:a.txt", "f:b.txt"]);
  });

  test("delete an object (its folder stays), a folder recursively; missing ones are 404", async () => {
    await put("del/keep/x.txt", "x");
    await put("del/gone/y.txt", "y");
    await put("del/gone/deeper/z.txt", "z");
    expect(await h.ok(ws, "DELETE", `/documents/object?connectionId=${conn}&path=del/keep/x.txt`)).toEqual({ kind: "object", path: "del/keep/x.txt", objects: 1 });
    expect(await names("del/keep")).toEqual([]);
    expect(await h.ok(ws, "DELETE", `/documents/folder?connectionId=${conn}&path=del/gone`)).toEqual({ kind: "folder", path: "del/gone", objects: 2 });
    expect(await names("del")).toEqual(["d:keep"]);
    expect((await h.api(ws, "DELETE", `/documents/object?connectionId=${conn}&path=del/keep/x.txt`)).status).toBe(404);
    expect((await h.api(ws, "DELETE", `/documents/folder?connectionId=${conn}&path=del/gone`)).status).toBe(404);
    // An object path is not a folder, a folder path not an object.
    expect((await h.api(ws, "DELETE", `/documents/object?connectionId=${conn}&path=del/keep`)).status).toBe(404);
  });

  test("bulk delete: one result per path, in order; missing ones fail alone", async () => {
    await put("bulk/1.txt", "1");
    await put("bulk/2.txt", "2");
    await put("bulk/dir/3.txt", "3");
    const r = await h.ok(ws, "POST", "/documents/bulk-delete", { connectionId: conn, paths: ["bulk/1.txt", "bulk/missing.txt", "bulk/dir", "bulk/2.txt"] });
    expect(r).toEqual({
      results: [
        { path: "bulk/1.txt", deleted: true, kind: "object", objects: 1 },
        { path: "bulk/missing.txt", deleted: false, objects: 0, error: { error: "not_found", message: "paths[1]: 'bulk/missing.txt' not found" } },
        { path: "bulk/dir", deleted: true, kind: "folder", objects: 1 },
        { path: "bulk/2.txt", deleted: true, kind: "object", objects: 1 },
      ],
      deleted: 3,
      failed: 1,
    });
    // The folder that held them stays; deleting a folder and a file in it leaves nothing behind of either.
    expect(await names("bulk")).toEqual([]);
    await put("bulk2/sub/a.txt", "a");
    const both = await h.ok(ws, "POST", "/documents/bulk-delete", { connectionId: conn, paths: ["bulk2/sub/a.txt", "bulk2/sub"] });
    expect(both.deleted).toBe(2);
    expect(await names("bulk2")).toEqual([]);
  });
});

describe("GraphQL and tRPC", () => {
  test("GraphQL: upload ticket, listing, metadata, link and delete with the same rules", async () => {
    const t = await h.graphql(ws.apiKey, "mutation($i: UploadUrlInput!) { documentUploadUrl(input: $i) { mode path url headers expiresIn } }", {
      i: { connectionId: conn, path: "gql", filename: "g.txt", size: 3, contentType: "text/plain" },
    });
    expect(t.body.errors).toBeUndefined();
    const ticketGql = t.body.data.documentUploadUrl;
    expect(ticketGql).toMatchObject({ mode: "single", path: "gql/g.txt", headers: { "content-type": "text/plain" } });
    expect((await fetch(ticketGql.url, { method: "PUT", headers: ticketGql.headers, body: "gql" })).status).toBe(200);
    const q = await h.graphql(
      ws.apiKey,
      `query($l: ListDocumentsInput!, $p: DocumentPathInput!) {
        documents(input: $l) { path nextCursor entries { kind path name size protected } }
        document(input: $p) { size etag contentType }
        documentDownloadUrl(input: $p) { filename mimetype expiresIn }
      }`,
      { l: { connectionId: conn, path: "gql" }, p: { connectionId: conn, path: "gql/g.txt" } },
    );
    expect(q.body.errors).toBeUndefined();
    expect(q.body.data.documents.entries).toEqual([{ kind: "object", path: "gql/g.txt", name: "g.txt", size: 3, protected: false }]);
    expect(q.body.data.document).toEqual({ size: 3, etag: md5("gql"), contentType: "text/plain" });
    expect(q.body.data.documentDownloadUrl).toEqual({ filename: "g.txt", mimetype: "text/plain", expiresIn: 3600 });
    const bad = await h.graphql(ws.apiKey, "query($p: DocumentPathInput!) { document(input: $p) { size } }", { p: { connectionId: conn, path: "../x" } });
    expect(bad.body.errors?.[0]?.message).toContain("path: must not contain '..'");
    expect(bad.body.errors?.[0]?.extensions.code).toBe("BAD_USER_INPUT");
    const del = await h.graphql(ws.apiKey, "mutation($i: DeleteDocumentInput!) { deleteDocument(input: $i) { kind objects } }", {
      i: { connectionId: conn, path: "gql/g.txt" },
    });
    expect(del.body.data.deleteDocument).toEqual({ kind: "object", objects: 1 });
  });

  test("tRPC: the same operations", async () => {
    const trpc = h.trpc(ws);
    const t = await trpc.documents.uploadUrl({ connectionId: conn, path: "rpc", filename: "r.txt", size: 3 });
    expect(t.mode).toBe("single");
    expect((await fetch(t.url!, { method: "PUT", headers: t.headers, body: "rpc" })).status).toBe(200);
    expect((await trpc.documents.list({ connectionId: conn, path: "rpc" })).entries.map((e) => e.name)).toEqual(["r.txt"]);
    expect((await trpc.documents.get({ connectionId: conn, path: "rpc/r.txt" })).size).toBe(3);
    await trpc.documents.createFolder({ connectionId: conn, path: "rpc/sub" });
    await trpc.documents.move({ connectionId: conn, from: "rpc/r.txt", to: "rpc/sub/r.txt" });
    expect((await trpc.documents.downloadUrl({ connectionId: conn, path: "rpc/sub/r.txt" })).filename).toBe("r.txt");
    expect((await trpc.documents.bulkDelete({ connectionId: conn, paths: ["rpc/sub"] })).deleted).toBe(1);
    await expect(trpc.documents.get({ connectionId: conn, path: "rpc/sub/r.txt" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(trpc.documents.list({ connectionId: conn, path: "/etc" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});

describe("sweeping abandoned uploads (local store)", () => {
  test("an hourly cron job is scheduled on local storage", () => {
    expect(jobDefinitions(h.svc).crons).toContainEqual({ name: "storage.sweep", cron: "23 * * * *", job: "storage.sweep" });
  });

  test("a multipart upload left alone for more than a day is removed; a fresh one stays", async () => {
    const body = pattern(9 * MiB, 12);
    const stale = await ticket({ filename: "stale.bin", size: body.length });
    const fresh = await ticket({ filename: "fresh.bin", size: body.length });
    for (const t of [stale, fresh]) expect((await fetch(t.parts![0]!.url, { method: "PUT", body: body.subarray(0, 8 * MiB) })).status).toBe(200);
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    utimesSync(join(h.dataDir, "objects", ".fps", "uploads", stale.uploadId!), twoDaysAgo, twoDaysAgo);
    expect(await sweepLocalStorage(h.svc)).toBe(1);
    const late = await fetch(stale.parts![1]!.url, { method: "PUT", body: body.subarray(8 * MiB) });
    expect(late.status).toBe(404);
    const parts = await putParts(fresh, body, [2]);
    const first = await fetch(fresh.parts![0]!.url, { method: "PUT", body: body.subarray(0, 8 * MiB) });
    parts[0]!.etag = first.headers.get("etag")!;
    expect((await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn, path: fresh.path, uploadId: fresh.uploadId, parts })).status).toBe(200);
  });
});
