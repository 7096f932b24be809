import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { spaceKey } from "../src/services/spaces";
import { connectionWith, type Listening, listeningHarness, MiB, pattern, putSingle, type Ticket } from "./helpers/documents";
import type { Harness, TestWorkspace } from "./helpers/harness";

/**
 * A `single` upload ticket binds the size it was asked for, as S3 signs a
 * presigned PUT's content length: the local store refuses a body of any
 * other size before reading it, and keeps nothing.
 */
let l: Listening;
let h: Harness;
let ws: TestWorkspace;
let conn: string;

beforeAll(async () => {
  l = await listeningHarness();
  h = l.h;
  ws = await h.workspace();
  conn = await connectionWith(h, ws, "Sized");
}, 60_000);
afterAll(() => l.close());

const ticket = (filename: string, size: number) => h.ok<Ticket>(ws, "POST", "/documents/upload-url", { connectionId: conn, filename, size, contentType: "application/octet-stream" });
const stored = async (filename: string) => (await h.svc.storage.stat(spaceKey(ws.workspaceId, conn, filename))) !== null;
/** Temp files of writes in progress or abandoned: none may be left by a refused body. */
const temps = () => {
  try {
    return readdirSync(join(h.dataDir, "objects", ".fps", "tmp"));
  } catch {
    return [];
  }
};

describe("upload tickets enforce their declared size on the local store", () => {
  test("a ticket for 4 bytes refuses a 1 MiB PUT with 413; nothing is kept", async () => {
    const t = await ticket("four.bin", 4);
    expect(t.mode).toBe("single");
    const res = await putSingle(t, pattern(MiB, 1));
    expect(res.status).toBe(413);
    expect((await res.json()).message).toContain("signed for 4 bytes");
    expect(await stored("four.bin")).toBe(false);
    expect(temps()).toEqual([]);
  });

  test("a shorter body is a 400; the exact size is taken", async () => {
    const t = await ticket("exact.bin", 4);
    const short = await putSingle(t, "abc");
    expect(short.status).toBe(400);
    expect((await short.json()).message).toContain("exactly 4 bytes");
    expect(await stored("exact.bin")).toBe(false);
    expect((await putSingle(t, "abcd")).status).toBe(200);
    expect(await stored("exact.bin")).toBe(true);
  });

  test("a chunked body (no content-length) is refused: the link needs the length it was signed for", async () => {
    const t = await ticket("chunked.bin", 4);
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode("abcd"));
        c.close();
      },
    });
    const res = await h.service.http.handle(new Request(t.url!, { method: "PUT", headers: t.headers, body }));
    expect(res.status).toBe(400);
    expect((await res.json()).message).toContain("content-length");
    expect(await stored("chunked.bin")).toBe(false);
  });

  test("raising the size in the link breaks its signature (403)", async () => {
    const t = await ticket("raised.bin", 4);
    const url = new URL(t.url!);
    url.searchParams.set("size", String(MiB));
    const res = await fetch(url, { method: "PUT", headers: t.headers, body: pattern(MiB, 2) });
    expect(res.status).toBe(403);
    expect(await stored("raised.bin")).toBe(false);
  });
});
