import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { spaceKey, spacePrefix } from "../src/services/spaces";
import { connectionWith, download, type Listening, listeningHarness, MiB, memberOf, pattern, putParts, putSingle, type Ticket } from "./helpers/documents";
import type { Harness, TestWorkspace } from "./helpers/harness";

/**
 * The documents API refusing: path tricks (400 naming the field, nothing
 * written, never outside the space), altered and expired links (403, nothing
 * written), pipeline-backed folders (409 without force, 403 with force and a
 * member key, allowed with force and an admin key), another workspace's
 * connection (404), bad input and clashes between files and folders.
 */
let l: Listening;
let h: Harness;
let admin: TestWorkspace;
let member: TestWorkspace;
let intruder: TestWorkspace;
let plain: string; // no pipelines
let guarded: string; // an inbound and an outbound pipeline

beforeAll(async () => {
  l = await listeningHarness({ DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(8 * MiB), MAX_UPLOAD_BYTES: String(1024 * MiB) });
  h = l.h;
  admin = await h.workspace({ name: "Owner" });
  member = await memberOf(h, admin);
  intruder = await h.workspace({ name: "Intruder" });
  plain = await connectionWith(h, admin, "Plain");
  guarded = await connectionWith(h, admin, "Guarded", ["inbound", "outbound"]);
});
afterAll(() => l.close());

/** Every file under the store's root (its own temp and upload folders included), to prove nothing was written. */
function storedFiles(): string[] {
  const root = join(h.dataDir, "objects");
  const out: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p.slice(root.length + 1));
    }
  };
  walk(root);
  // Metadata sidecars and the pins of downloads in flight are the store's bookkeeping, not objects.
  return out.filter((p) => !p.startsWith(".fps/meta/") && !p.startsWith(".fps/pins/")).sort();
}

const q = (o: Record<string, string>) => new URLSearchParams(o).toString();
const put = async (ws: TestWorkspace, conn: string, path: string, body = "x") => {
  const slash = path.lastIndexOf("/");
  const t = await h.ok<Ticket>(ws, "POST", "/documents/upload-url", {
    connectionId: conn,
    path: slash < 0 ? "" : path.slice(0, slash),
    filename: path.slice(slash + 1),
    size: body.length,
    contentType: "text/plain",
    force: true,
  });
  expect((await putSingle(t, body)).status).toBe(200);
};
const exists = async (conn: string, path: string) => (await h.svc.storage.stat(spaceKey(admin.workspaceId, conn, path))) !== null;

describe("path tricks are a 400 naming the field, and nothing is written", () => {
  const TRICKS = [
    "../x",
    "a/../../x",
    "..",
    "a/..",
    "a/../b",
    "/etc/passwd",
    "//x",
    "a\\b",
    "..\\..\\x",
    "a\u0000b",
    "x\u0000/../../y",
    "a\nb",
    "a\rb",
    "tab\there",
    "del\u007f",
    "esc\u001b[2J",
    ".fps/tmp/x",
    "x/.fps-folder",
    ".fps-folder",
    "a/".repeat(500),
  ];

  test("in every field of every operation", async () => {
    await put(admin, plain, "ok/file.txt");
    const before = storedFiles();
    for (const trick of TRICKS) {
      const calls: [string, string, string, unknown][] = [
        ["path", "POST", "/documents/upload-url", { connectionId: plain, path: trick, filename: "f.txt", size: 1 }],
        ["path", "POST", "/documents/upload-complete", { connectionId: plain, path: trick, uploadId: "0".repeat(32), parts: [{ partNumber: 1, etag: "e" }] }],
        ["path", "POST", "/documents/upload-abort", { connectionId: plain, path: trick, uploadId: "0".repeat(32) }],
        ["path", "GET", `/documents?${q({ connectionId: plain, path: trick })}`, undefined],
        ["path", "GET", `/documents/object?${q({ connectionId: plain, path: trick })}`, undefined],
        ["path", "GET", `/documents/download-url?${q({ connectionId: plain, path: trick })}`, undefined],
        ["path", "POST", "/documents/folders", { connectionId: plain, path: trick }],
        ["from", "POST", "/documents/move", { connectionId: plain, from: trick, to: "ok/moved" }],
        ["to", "POST", "/documents/move", { connectionId: plain, from: "ok/file.txt", to: trick }],
        ["path", "POST", "/documents/rename", { connectionId: plain, path: trick, name: "n" }],
        ["path", "DELETE", `/documents/object?${q({ connectionId: plain, path: trick })}`, undefined],
        ["path", "DELETE", `/documents/folder?${q({ connectionId: plain, path: trick })}`, undefined],
        ["paths[1]", "POST", "/documents/bulk-delete", { connectionId: plain, paths: ["ok/file.txt", trick] }],
      ];
      // A name is one segment: the same tricks as a file name or a new name.
      if (trick !== "" && !/^\/?\/?x$/.test(trick)) {
        calls.push(["filename", "POST", "/documents/upload-url", { connectionId: plain, path: "ok", filename: trick, size: 1 }]);
        calls.push(["name", "POST", "/documents/rename", { connectionId: plain, path: "ok/file.txt", name: trick }]);
      }
      for (const [field, method, path, body] of calls) {
        const r = await h.api(admin, method, path, body);
        const what = `${method} ${path.split("?")[0]} ${field}=${JSON.stringify(trick)}`;
        expect({ what, status: r.status }).toEqual({ what, status: 400 });
        expect(r.body.error, what).toBe("invalid_input");
        // A NUL in a JSON body is refused for the whole body before any field is read (src/transport/body.ts).
        if (trick.includes("\u0000") && body !== undefined) expect(r.body.message, what).toStartWith("body: contains a NUL character");
        else expect(r.body.message, what).toStartWith(`${field}:`);
      }
    }
    expect(storedFiles()).toEqual(before);
    expect(await exists(plain, "ok/file.txt")).toBe(true);
  });

  test("GraphQL and tRPC refuse the same tricks with the same message", async () => {
    const gql = await h.graphql(admin.apiKey, "mutation($i: CreateFolderInput!) { createDocumentFolder(input: $i) { path } }", {
      i: { connectionId: plain, path: "a/../../b" },
    });
    expect(gql.body.errors?.[0]?.message).toBe("path: must not contain '..'");
    await expect(h.trpc(admin).documents.uploadUrl({ connectionId: plain, path: "/abs", filename: "x", size: 1 })).rejects.toThrow(
      "path: must be relative to the connection's space (no leading '/')",
    );
  });

  test("encoded or look-alike dots are plain names and stay inside the space", async () => {
    for (const name of ["%2e%2e", "..%2f..%2fetc", "．．", "...", "..x", "x.."]) {
      const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "odd", filename: name, size: 2 });
      expect(t.path).toBe(`odd/${name}`);
      expect((await putSingle(t, "ok")).status).toBe(200);
      expect((await h.svc.storage.stat(`${spacePrefix(admin.workspaceId, plain)}odd/${name}`))?.size).toBe(2);
    }
    // Nothing landed outside this connection's space.
    const others = storedFiles().filter((p) => !p.startsWith(".fps/") && !p.startsWith(`ws/${admin.workspaceId}/spaces/`));
    expect(others).toEqual([]);
  });

  test("a query-string path is decoded once: %2e%2e%2f is '../' and refused", async () => {
    const r = await h.api(admin, "GET", `/documents/object?connectionId=${plain}&path=ok%2f%2e%2e%2f%2e%2e%2fx`);
    expect(r.status).toBe(400);
    expect(r.body.message).toBe("path: must not contain '..'");
  });
});

describe("altered and expired links are refused with 403, and nothing is written", () => {
  test("single-upload link: signature, key, expiry, bound content type, method", async () => {
    const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "tamper", filename: "t.csv", size: 3, contentType: "text/csv" });
    const url = new URL(t.url!);
    const sig = url.searchParams.get("sig")!;
    const variants: [string, string, Record<string, string>][] = [];
    const set = (k: string, v: string | null) => {
      const u = new URL(url);
      if (v === null) u.searchParams.delete(k);
      else u.searchParams.set(k, v);
      return u.toString();
    };
    variants.push(["signature", set("sig", `${sig.slice(0, -2)}${sig.endsWith("AA") ? "BB" : "AA"}`), t.headers]);
    variants.push(["no signature", set("sig", null), t.headers]);
    variants.push(["key", t.url!.replace("/tamper/t.csv", "/tamper/other.csv"), t.headers]);
    variants.push(["another connection's key", t.url!.replace(`/spaces/${plain}/`, `/spaces/${guarded}/`), t.headers]);
    variants.push(["expiry pushed out", set("expires", String(Number(url.searchParams.get("expires")) + 3600)), t.headers]);
    variants.push(["bound type dropped", set("type", null), { "content-type": "text/csv" }]);
    variants.push(["other content type sent", t.url!, { "content-type": "application/json" }]);
    for (const [what, u, headers] of variants) {
      const res = await fetch(u, { method: "PUT", headers, body: "a,b" });
      expect({ what, status: res.status }).toEqual({ what, status: 403 });
      expect((await res.json()).error).toBe("forbidden");
    }
    expect(await exists(plain, "tamper/t.csv")).toBe(false);
    expect(await exists(plain, "tamper/other.csv")).toBe(false);
    expect(await exists(guarded, "tamper/t.csv")).toBe(false);
    expect(storedFiles().filter((p) => p.startsWith(".fps/tmp/"))).toEqual([]);
    // The untouched link works.
    expect((await putSingle(t, "a,b")).status).toBe(200);
  });

  test("a download link cannot upload; a part link cannot be moved to another part or upload", async () => {
    await put(admin, plain, "tamper/read.txt", "original");
    const link = await h.ok(admin, "GET", `/documents/download-url?${q({ connectionId: plain, path: "tamper/read.txt" })}`);
    const asPut = await fetch(link.url, { method: "PUT", body: "overwritten" });
    expect(asPut.status).toBe(403);
    expect(new TextDecoder().decode((await download(link.url)).bytes)).toBe("original");

    const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "tamper", filename: "mp.bin", size: 9 * MiB });
    const part1 = new URL(t.parts![0]!.url);
    for (const [what, u] of [
      ["partNumber", (() => (part1.searchParams.set("partNumber", "2"), part1.toString()))()],
      ["uploadId", t.parts![1]!.url.replace(t.uploadId!, "f".repeat(32))],
    ] as const) {
      const res = await fetch(u, { method: "PUT", body: pattern(16, 1) });
      expect({ what, status: res.status }).toEqual({ what, status: 403 });
    }
    await h.ok(admin, "POST", "/documents/upload-abort", { connectionId: plain, path: t.path, uploadId: t.uploadId });
  });

  test("an upload cut short (the client goes away before content-length bytes) leaves no object and no temp file", async () => {
    const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "cut", filename: "short.bin", size: 100_000 });
    const big = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "cut", filename: "parts.bin", size: 9 * MiB });
    for (const url of [new URL(t.url!), new URL(big.parts![0]!.url)]) {
      const closed = Promise.withResolvers<void>();
      const socket = await Bun.connect({
        hostname: url.hostname,
        port: Number(url.port),
        socket: { data() {}, close: () => closed.resolve(), error: () => closed.resolve() },
      });
      const type = url.searchParams.get("type");
      socket.write(
        `PUT ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n${type ? `content-type: ${type}\r\n` : ""}content-length: 100000\r\n\r\n${"x".repeat(1000)}`,
      );
      await Bun.sleep(200);
      socket.end();
      await closed.promise;
    }
    await Bun.sleep(200);
    expect(await exists(plain, "cut/short.bin")).toBe(false);
    expect(storedFiles().filter((p) => p.startsWith(".fps/tmp/"))).toEqual([]);
    // The multipart upload is still usable: the cut part was never recorded.
    const complete = await h.api(admin, "POST", "/documents/upload-complete", {
      connectionId: plain,
      path: big.path,
      uploadId: big.uploadId,
      parts: [{ partNumber: 1, etag: "0".repeat(32) }],
    });
    expect(complete.status).toBe(400);
    await h.ok(admin, "POST", "/documents/upload-abort", { connectionId: plain, path: big.path, uploadId: big.uploadId });
  });

  test("an expired link (FILE_LINK_TTL_SECONDS=1) is refused; nothing is written", async () => {
    const short = await listeningHarness({ FILE_LINK_TTL_SECONDS: "1", DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(8 * MiB) });
    try {
      const ws = await short.h.workspace();
      const conn = await connectionWith(short.h, ws, "Short");
      const single = await short.h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, filename: "late.txt", size: 4 });
      const multi = await short.h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, filename: "late.bin", size: 9 * MiB });
      expect(single.expiresIn).toBe(1);
      await Bun.sleep(2100);
      const res = await putSingle(single, "late");
      expect(res.status).toBe(403);
      expect((await res.json()).message).toContain("expired");
      const part = await fetch(multi.parts![0]!.url, { method: "PUT", body: pattern(8 * MiB, 2) });
      expect(part.status).toBe(403);
      await part.arrayBuffer();
      expect(await short.h.svc.storage.stat(spaceKey(ws.workspaceId, conn, "late.txt"))).toBeNull();
    } finally {
      await short.close();
    }
  }, 30_000);
});

describe("pipeline-backed folders: force and an admin key", () => {
  const refusals = async (call: (ws: TestWorkspace, force: boolean) => Promise<{ status: number; body: any }>) => {
    const a = await call(admin, false);
    const m = await call(member, false);
    const mf = await call(member, true);
    return { admin: a.status, member: m.status, memberForce: mf.status, message: a.body.message as string, forbidden: mf.body.message as string };
  };

  test("the listing marks inbound and outbound protected on a connection with pipelines, not on one without", async () => {
    const g = await h.ok(member, "GET", `/documents?connectionId=${guarded}`);
    expect(g.entries.filter((e: { protected: boolean }) => e.protected).map((e: { name: string }) => e.name)).toEqual(["inbound", "outbound"]);
    const p = await h.ok(member, "GET", `/documents?connectionId=${plain}`);
    expect(p.entries.some((e: { protected: boolean }) => e.protected)).toBe(false);
  });

  test("upload tickets into inbound/outbound: 409 without force, 403 with force and a member key, a ticket with force and an admin key", async () => {
    for (const folder of ["inbound", "outbound", "inbound/deep/er"]) {
      const call = (ws: TestWorkspace, force: boolean) =>
        h.api(ws, "POST", "/documents/upload-url", { connectionId: guarded, path: folder, filename: "f.csv", size: 3, force });
      const r = await refusals(call);
      expect(r).toMatchObject({ admin: 409, member: 409, memberForce: 403 });
      expect(r.message).toStartWith(`path: '${folder}/f.csv' is in the '${folder.split("/")[0]}' folder`);
      expect(r.message).toContain("force: true with an admin key");
      const ok = await call(admin, true);
      expect(ok.status).toBe(200);
    }
    // The same folders of a connection without pipelines are open to anyone.
    expect((await h.api(member, "POST", "/documents/upload-url", { connectionId: plain, path: "inbound", filename: "f.csv", size: 3 })).status).toBe(200);
  });

  test("completing a multipart upload into a protected folder needs force and an admin key too", async () => {
    const body = pattern(8 * MiB + 5, 9);
    const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: guarded, path: "outbound", filename: "big.bin", size: body.length, force: true });
    const parts = await putParts(t, body);
    const call = (ws: TestWorkspace, force: boolean) =>
      h.api(ws, "POST", "/documents/upload-complete", { connectionId: guarded, path: t.path, uploadId: t.uploadId, parts, force });
    expect(await refusals(call)).toMatchObject({ admin: 409, member: 409, memberForce: 403 });
    expect(await exists(guarded, "outbound/big.bin")).toBe(false);
    expect((await call(admin, true)).status).toBe(200);
    expect(await exists(guarded, "outbound/big.bin")).toBe(true);
  });

  test("folders, moves, renames and deletes in or out of them are refused the same way and change nothing", async () => {
    await put(admin, guarded, "inbound/orders.csv", "a\n1\n");
    await put(admin, guarded, "outbound/result.json", "[]");
    await put(admin, guarded, "free/note.txt", "n");
    const snapshot = storedFiles();
    const ops: [string, (ws: TestWorkspace, force: boolean) => Promise<{ status: number; body: any }>][] = [
      ["create folder", (ws, force) => h.api(ws, "POST", "/documents/folders", { connectionId: guarded, path: "inbound/new", force })],
      ["move out", (ws, force) => h.api(ws, "POST", "/documents/move", { connectionId: guarded, from: "inbound/orders.csv", to: "free/orders.csv", force })],
      ["move in", (ws, force) => h.api(ws, "POST", "/documents/move", { connectionId: guarded, from: "free/note.txt", to: "outbound/note.txt", force })],
      ["move the folder", (ws, force) => h.api(ws, "POST", "/documents/move", { connectionId: guarded, from: "outbound", to: "elsewhere", force })],
      ["rename the folder", (ws, force) => h.api(ws, "POST", "/documents/rename", { connectionId: guarded, path: "inbound", name: "renamed", force })],
      ["rename a file", (ws, force) => h.api(ws, "POST", "/documents/rename", { connectionId: guarded, path: "inbound/orders.csv", name: "o.csv", force })],
      ["delete a file", (ws, force) => h.api(ws, "DELETE", `/documents/object?${q({ connectionId: guarded, path: "inbound/orders.csv", force: String(force) })}`)],
      ["delete the folder", (ws, force) => h.api(ws, "DELETE", `/documents/folder?${q({ connectionId: guarded, path: "outbound", force: String(force) })}`)],
    ];
    for (const [what, call] of ops) {
      const r = await refusals(call);
      expect({ what, ...r, message: undefined, forbidden: undefined }).toEqual({ what, admin: 409, member: 409, memberForce: 403, message: undefined, forbidden: undefined });
      expect(r.forbidden, what).toContain("needs an admin key");
    }
    expect(storedFiles()).toEqual(snapshot);

    // With force and an admin key they go through.
    expect((await h.api(admin, "POST", "/documents/rename", { connectionId: guarded, path: "inbound/orders.csv", name: "o.csv", force: true })).status).toBe(200);
    expect((await h.api(admin, "POST", "/documents/move", { connectionId: guarded, from: "free/note.txt", to: "outbound/note.txt", force: true })).status).toBe(200);
    expect((await h.api(admin, "DELETE", `/documents/object?${q({ connectionId: guarded, path: "inbound/o.csv", force: "true" })}`)).status).toBe(200);
    const gone = await h.api(admin, "DELETE", `/documents/folder?${q({ connectionId: guarded, path: "outbound", force: "true" })}`);
    expect(gone.body).toMatchObject({ kind: "folder", objects: 3 });
    expect(await exists(guarded, "outbound/result.json")).toBe(false);
    // The well-known folders are still listed.
    const root = await h.ok(admin, "GET", `/documents?connectionId=${guarded}`);
    expect(root.entries.map((e: { name: string }) => e.name)).toEqual(expect.arrayContaining(["inbound", "outbound"]));
  });

  test("bulk delete reports protected paths on their own lines and deletes the rest", async () => {
    await put(admin, guarded, "inbound/keep.csv");
    await put(admin, guarded, "loose/a.txt");
    await put(admin, guarded, "loose/b.txt");
    const r = await h.ok(member, "POST", "/documents/bulk-delete", { connectionId: guarded, paths: ["loose/a.txt", "inbound/keep.csv"] });
    expect(r.results[1]).toMatchObject({ path: "inbound/keep.csv", deleted: false, error: { error: "conflict" } });
    expect(r).toMatchObject({ deleted: 1, failed: 1 });
    const f = await h.ok(member, "POST", "/documents/bulk-delete", { connectionId: guarded, paths: ["inbound/keep.csv", "loose/b.txt"], force: true });
    expect(f.results[0]).toMatchObject({ deleted: false, error: { error: "forbidden" } });
    expect(f.results[1]).toMatchObject({ deleted: true });
    expect(await exists(guarded, "inbound/keep.csv")).toBe(true);
    const a = await h.ok(admin, "POST", "/documents/bulk-delete", { connectionId: guarded, paths: ["inbound/keep.csv"], force: true });
    expect(a).toMatchObject({ deleted: 1, failed: 0 });
  });
});

describe("another workspace's connection is a 404 everywhere", () => {
  test("every operation, with the intruder's own key", async () => {
    await put(admin, plain, "secret/plan.txt", "Owner's plan");
    const calls: [string, string, unknown][] = [
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x.txt", size: 1 }],
      ["POST", "/documents/upload-complete", { connectionId: plain, path: "x.bin", uploadId: "0".repeat(32), parts: [{ partNumber: 1, etag: "e" }] }],
      ["POST", "/documents/upload-abort", { connectionId: plain, path: "x.bin", uploadId: "0".repeat(32) }],
      ["GET", `/documents?${q({ connectionId: plain })}`, undefined],
      ["GET", `/documents/object?${q({ connectionId: plain, path: "secret/plan.txt" })}`, undefined],
      ["GET", `/documents/download-url?${q({ connectionId: plain, path: "secret/plan.txt" })}`, undefined],
      ["POST", "/documents/folders", { connectionId: plain, path: "x" }],
      ["POST", "/documents/move", { connectionId: plain, from: "secret/plan.txt", to: "stolen.txt" }],
      ["POST", "/documents/rename", { connectionId: plain, path: "secret/plan.txt", name: "stolen.txt" }],
      ["DELETE", `/documents/object?${q({ connectionId: plain, path: "secret/plan.txt" })}`, undefined],
      ["DELETE", `/documents/folder?${q({ connectionId: plain, path: "secret" })}`, undefined],
      ["POST", "/documents/bulk-delete", { connectionId: plain, paths: ["secret/plan.txt"] }],
    ];
    for (const [method, path, body] of calls) {
      const r = await h.api(intruder, method, path, body);
      expect({ route: `${method} ${path}`, status: r.status }).toEqual({ route: `${method} ${path}`, status: 404 });
      expect(r.body.message).toBe(`connection '${plain}' not found`);
      expect(JSON.stringify(r.body)).not.toContain("plan");
    }
    expect(await exists(plain, "secret/plan.txt")).toBe(true);
    // An unknown id is the same 404.
    expect((await h.api(admin, "GET", "/documents?connectionId=conn_nope")).status).toBe(404);
  });
});

describe("another workspace's connection on GraphQL and tRPC", () => {
  test("every tRPC documents procedure is NOT_FOUND, in process and over HTTP", async () => {
    const inputs: Record<string, unknown> = {
      uploadUrl: { connectionId: plain, filename: "x.txt", size: 1 },
      completeUpload: { connectionId: plain, path: "x.bin", uploadId: "0".repeat(32), parts: [{ partNumber: 1, etag: "e" }] },
      abortUpload: { connectionId: plain, path: "x.bin", uploadId: "0".repeat(32) },
      list: { connectionId: plain },
      get: { connectionId: plain, path: "ok/file.txt" },
      downloadUrl: { connectionId: plain, path: "ok/file.txt" },
      createFolder: { connectionId: plain, path: "x" },
      move: { connectionId: plain, from: "ok/file.txt", to: "stolen.txt" },
      rename: { connectionId: plain, path: "ok/file.txt", name: "stolen.txt" },
      delete: { connectionId: plain, path: "ok/file.txt" },
      deleteFolder: { connectionId: plain, path: "ok" },
      bulkDelete: { connectionId: plain, paths: ["ok/file.txt"] },
    };
    const { appRouter } = await import("../trpc/router");
    const procedures = Object.keys(appRouter._def.procedures as object).filter((p) => p.startsWith("documents."));
    expect(procedures.map((p) => p.slice("documents.".length)).sort()).toEqual(Object.keys(inputs).sort());
    const caller = h.trpc(intruder).documents as unknown as Record<string, (i: unknown) => Promise<unknown>>;
    for (const [name, input] of Object.entries(inputs)) {
      await expect(caller[name]!(input), name).rejects.toMatchObject({ code: "NOT_FOUND", message: `connection '${plain}' not found` });
    }
    const overHttp = await h.request("POST", "/trpc/documents.move", { key: intruder.apiKey, body: inputs.move });
    expect(overHttp.status).toBe(404);
    expect(await exists(plain, "ok/file.txt")).toBe(true);
  });

  test("every GraphQL documents field is NOT_FOUND with REST's message", async () => {
    const fields: [string, string, unknown][] = [
      ["query($i: ListDocumentsInput!) { documents(input: $i) { path } }", "documents", { connectionId: plain }],
      ["query($i: DocumentPathInput!) { document(input: $i) { path } }", "document", { connectionId: plain, path: "ok/file.txt" }],
      ["query($i: DocumentPathInput!) { documentDownloadUrl(input: $i) { url } }", "documentDownloadUrl", { connectionId: plain, path: "ok/file.txt" }],
      ["mutation($i: UploadUrlInput!) { documentUploadUrl(input: $i) { mode } }", "documentUploadUrl", { connectionId: plain, filename: "x", size: 1 }],
      [
        "mutation($i: CompleteUploadInput!) { completeDocumentUpload(input: $i) { path } }",
        "completeDocumentUpload",
        { connectionId: plain, path: "x", uploadId: "u", parts: [{ partNumber: 1, etag: "e" }] },
      ],
      ["mutation($i: AbortUploadInput!) { abortDocumentUpload(input: $i) { aborted } }", "abortDocumentUpload", { connectionId: plain, path: "x", uploadId: "u" }],
      ["mutation($i: CreateFolderInput!) { createDocumentFolder(input: $i) { path } }", "createDocumentFolder", { connectionId: plain, path: "x" }],
      ["mutation($i: MoveDocumentInput!) { moveDocument(input: $i) { to } }", "moveDocument", { connectionId: plain, from: "ok/file.txt", to: "y" }],
      ["mutation($i: RenameDocumentInput!) { renameDocument(input: $i) { to } }", "renameDocument", { connectionId: plain, path: "ok/file.txt", name: "y" }],
      ["mutation($i: DeleteDocumentInput!) { deleteDocument(input: $i) { path } }", "deleteDocument", { connectionId: plain, path: "ok/file.txt" }],
      ["mutation($i: DeleteDocumentInput!) { deleteDocumentFolder(input: $i) { path } }", "deleteDocumentFolder", { connectionId: plain, path: "ok" }],
      ["mutation($i: BulkDeleteInput!) { bulkDeleteDocuments(input: $i) { deleted } }", "bulkDeleteDocuments", { connectionId: plain, paths: ["ok/file.txt"] }],
    ];
    for (const [op, field, input] of fields) {
      const g = await h.graphql(intruder.apiKey, op, { i: input });
      expect(g.body.data?.[field], field).toBeNull();
      expect(g.body.errors?.[0]?.message, field).toBe(`connection '${plain}' not found`);
      expect(g.body.errors?.[0]?.extensions.code, field).toBe("NOT_FOUND");
    }
    expect(await exists(plain, "ok/file.txt")).toBe(true);
  });
});

describe("bad input and clashes", () => {
  test("bad members are a 400 naming them; nothing is created", async () => {
    const before = storedFiles();
    const cases: [string, string, unknown, string][] = [
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: -1 }, "size: must be at least 0"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: 1.5 }, "size: must be a whole number"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: "10" }, "size: must be a whole number"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: 1024 * MiB + 1 }, "size: must be at most 1073741824 bytes"],
      ["POST", "/documents/upload-url", { connectionId: plain, size: 1 }, "filename: is required"],
      ["POST", "/documents/upload-url", { filename: "x", size: 1 }, "connectionId: is required"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "a/b.txt", size: 1 }, "filename: must be a name without '/'"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: 1, contentType: "text" }, "contentType: must be a media type"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: 1, force: "yes" }, "force: must be true or false"],
      ["POST", "/documents/upload-url", { connectionId: plain, filename: "x", size: 1, sise: 2 }, "sise: unknown member"],
      ["POST", "/documents/upload-complete", { connectionId: plain, path: "x", uploadId: "u", parts: [] }, "parts: must list at least one part"],
      ["POST", "/documents/upload-complete", { connectionId: plain, path: "x", uploadId: "u", parts: [{ partNumber: 0, etag: "e" }] }, "parts[0].partNumber: must be at least 1"],
      ["POST", "/documents/upload-complete", { connectionId: plain, path: "", uploadId: "u", parts: [{ partNumber: 1, etag: "e" }] }, "path: must name an object or folder"],
      ["POST", "/documents/bulk-delete", { connectionId: plain, paths: [] }, "paths: must list at least one path"],
      ["POST", "/documents/bulk-delete", { connectionId: plain, paths: Array(1001).fill("a") }, "paths: must list at most 1000 paths"],
      ["POST", "/documents/bulk-delete", { connectionId: plain, paths: [""] }, "paths[0]: must name an object or folder, not the space root"],
      ["POST", "/documents/folders", { connectionId: plain, path: "" }, "path: must name an object or folder, not the space root"],
      ["POST", "/documents/move", { connectionId: plain, from: "", to: "x" }, "from: must name an object or folder, not the space root"],
      ["POST", "/documents/move", { connectionId: plain, from: "ok/file.txt", to: "ok/file.txt" }, "to: is the same path as from"],
      ["GET", `/documents?${q({ connectionId: plain, limit: "0" })}`, undefined, "limit: must be at least 1"],
      ["GET", `/documents?${q({ connectionId: plain, limit: "many" })}`, undefined, "limit: must be a whole number"],
      ["GET", `/documents?${q({ connectionId: plain, path: "ok", cursor: "other/x" })}`, undefined, "cursor: is not a cursor of this folder"],
      ["DELETE", `/documents/folder?${q({ connectionId: plain, path: "" })}`, undefined, "path: must name an object or folder, not the space root"],
      ["DELETE", `/documents/object?${q({ connectionId: plain, path: "ok/file.txt", force: "maybe" })}`, undefined, "force: must be true or false"],
    ];
    for (const [method, path, body, message] of cases) {
      const r = await h.api(admin, method, path, body);
      expect({ route: `${method} ${path}`, status: r.status }).toEqual({ route: `${method} ${path}`, status: 400 });
      expect(r.body.message).toStartWith(message);
    }
    expect(storedFiles()).toEqual(before);
  });

  test("a file cannot be where a folder is, nor inside a file (409 on both stores' terms), nothing changes", async () => {
    await put(admin, plain, "clash/file.txt");
    await h.ok(admin, "POST", "/documents/folders", { connectionId: plain, path: "clash/dir" });
    const before = storedFiles();
    const r1 = await h.api(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "clash/file.txt", filename: "inner.txt", size: 1 });
    expect(r1.status).toBe(409);
    expect(r1.body.message).toBe("path: 'clash/file.txt' is a file, so 'clash/file.txt/inner.txt' cannot be made inside it");
    const r2 = await h.api(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "clash", filename: "dir", size: 1 });
    expect(r2.status).toBe(409);
    expect(r2.body.message).toBe("path: 'clash/dir' is a folder");
    expect((await h.api(admin, "POST", "/documents/folders", { connectionId: plain, path: "clash/file.txt" })).status).toBe(409);
    expect((await h.api(admin, "POST", "/documents/folders", { connectionId: plain, path: "clash/file.txt/sub" })).status).toBe(409);
    expect((await h.api(admin, "POST", "/documents/move", { connectionId: plain, from: "clash/dir", to: "clash/file.txt/dir" })).status).toBe(409);
    expect(storedFiles()).toEqual(before);
  });

  test("a folder made after the ticket was issued: the local store refuses the PUT with 409 and the folder stays", async () => {
    const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, path: "race", filename: "spot", size: 1 });
    await h.ok(admin, "POST", "/documents/folders", { connectionId: plain, path: "race/spot" });
    const res = await putSingle(t, "x");
    expect(res.status).toBe(409);
    expect((await res.json()).error).toBe("conflict");
    expect((await h.ok(admin, "GET", `/documents?${q({ connectionId: plain, path: "race/spot" })}`)).entries).toEqual([]);
    expect(storedFiles().filter((p) => p.startsWith(".fps/tmp/"))).toEqual([]);
  });

  test("completing with a wrong ETag or a missing part is a 400 and no object appears", async () => {
    const body = pattern(8 * MiB + 1, 5);
    const t = await h.ok<Ticket>(admin, "POST", "/documents/upload-url", { connectionId: plain, filename: "etag.bin", size: body.length });
    const parts = await putParts(t, body);
    const wrong = await h.api(admin, "POST", "/documents/upload-complete", {
      connectionId: plain,
      path: t.path,
      uploadId: t.uploadId,
      parts: [parts[0], { partNumber: 2, etag: "0".repeat(32) }],
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toStartWith("parts[1]:");
    const order = await h.api(admin, "POST", "/documents/upload-complete", { connectionId: plain, path: t.path, uploadId: t.uploadId, parts: [parts[1], parts[0]] });
    expect(order.status).toBe(400);
    expect(await exists(plain, "etag.bin")).toBe(false);
    expect((await h.api(admin, "POST", "/documents/upload-complete", { connectionId: plain, path: t.path, uploadId: t.uploadId, parts })).status).toBe(200);
  });

  test("an upload id the store never issued: completion is a 404, abort answers aborted false", async () => {
    const c = await h.api(admin, "POST", "/documents/upload-complete", { connectionId: plain, path: "x.bin", uploadId: "not-an-upload", parts: [{ partNumber: 1, etag: "e" }] });
    expect(c.status).toBe(404);
    expect(await h.ok(admin, "POST", "/documents/upload-abort", { connectionId: plain, path: "x.bin", uploadId: "not-an-upload" })).toEqual({ aborted: false });
  });
});
