import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { createObjectStore } from "../src/adapters/storage";
import { LocalObjectStore, MIN_PART_BYTES } from "../src/adapters/storage/local";
import type { ObjectStore } from "../src/adapters/storage/port";
import { S3ObjectStore } from "../src/adapters/storage/s3";
import { Harness } from "./helpers/harness";
import { startS3 } from "./helpers/s3";

/**
 * One contract, two stores: the local disk (its links served by the service
 * over real HTTP) and S3 (s3rver on loopback). Links are used with plain
 * `fetch`, as a partner's HTTP client would.
 */
interface Subject {
  store: ObjectStore;
  /** A GET link for `key` that expired a minute ago. */
  expiredLink(key: string): Promise<string>;
  close(): Promise<void>;
}

async function localSubject(): Promise<Subject> {
  const h = await Harness.start({ startJobs: false });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => h.service.http.handle(req) });
  // Same root and signing key as the service, with links pointing at the real listener.
  const cfg = { ...h.svc.storageConfig, publicUrl: server.url.origin };
  return {
    store: createObjectStore(cfg),
    expiredLink: (key) => createObjectStore(cfg, { now: () => Date.now() - 120_000 }).presign(key, { method: "GET", expiresIn: 60 }),
    async close() {
      server.stop(true);
      await h.close();
    },
  };
}

async function s3Subject(): Promise<Subject> {
  const s3 = await startS3();
  const store = createObjectStore(s3.config) as S3ObjectStore;
  return {
    store,
    expiredLink: (key) =>
      getSignedUrl(store.client, new GetObjectCommand({ Bucket: s3.config.bucket, Key: key }), {
        expiresIn: 60,
        signingDate: new Date(Date.now() - 120_000),
      }),
    async close() {
      store.close();
      await s3.stop();
    },
  };
}

const text = async (s: ReadableStream<Uint8Array> | null) => (s === null ? null : await new Response(s).text());
const bytes = async (s: ReadableStream<Uint8Array> | null) => new Uint8Array(await new Response(s).arrayBuffer());
const md5 = (b: Uint8Array | string) => createHash("md5").update(b).digest("hex");
const unquote = (etag: string | null) => (etag ?? "").replace(/"/g, "");

/** Deterministic, non-repeating-looking bytes, so a misplaced part would show. */
function pattern(size: number, seed: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

describe.each([
  ["local", localSubject],
  ["s3", s3Subject],
] as const)("object store contract: %s", (kind, make) => {
  let subject: Subject;
  let store: ObjectStore;
  beforeAll(async () => {
    subject = await make();
    store = subject.store;
  });
  afterAll(() => subject.close());

  test("is the kind it says", () => {
    expect(store.kind).toBe(kind);
  });

  describe("put, get, stat", () => {
    test("every body form round-trips; stat reports size, md5 etag and the content type", async () => {
      const forms = {
        string: "héllo, wörld\n",
        bytes: new TextEncoder().encode("héllo, wörld\n"),
        stream: new Response("héllo, wörld\n").body!,
        iterable: (async function* () {
          yield new TextEncoder().encode("héllo, ");
          yield new TextEncoder().encode("wörld\n");
        })(),
      };
      for (const [name, body] of Object.entries(forms)) {
        const key = `rt/${name}.txt`;
        const info = await store.put(key, body, { contentType: "text/plain; charset=utf-8" });
        expect(info).toMatchObject({ key, size: 15, etag: md5("héllo, wörld\n"), contentType: "text/plain; charset=utf-8" });
        expect(info.updatedAt).toBeInstanceOf(Date);
        expect(await store.stat(key)).toMatchObject({ key, size: 15, etag: info.etag, contentType: "text/plain; charset=utf-8" });
        expect(await text(await store.get(key))).toBe("héllo, wörld\n");
      }
    });

    test("without a content type, one is taken from the extension", async () => {
      expect((await store.put("rt/guess.csv", "a,b\n")).contentType).toStartWith("text/csv");
      expect((await store.put("rt/guess.unknownext", "x")).contentType).toBe("application/octet-stream");
    });

    test("a missing object: stat and get answer null, exists false", async () => {
      expect(await store.stat("rt/missing.txt")).toBeNull();
      expect(await store.get("rt/missing.txt")).toBeNull();
      expect(await store.exists("rt/missing.txt")).toBe(false);
    });

    test("exists: true for an object, also an empty one; false for a folder of objects and after a delete", async () => {
      await store.put("rt/ex/here.txt", "x");
      await store.put("rt/ex/empty", "");
      expect(await store.exists("rt/ex/here.txt")).toBe(true);
      expect(await store.exists("rt/ex/empty")).toBe(true);
      expect(await store.exists("rt/ex")).toBe(false);
      await store.delete("rt/ex/here.txt");
      expect(await store.exists("rt/ex/here.txt")).toBe(false);
    });

    test("an empty object is an object", async () => {
      const info = await store.put("rt/empty", "");
      expect(info.size).toBe(0);
      expect(info.etag).toBe(md5(""));
      expect(await text(await store.get("rt/empty"))).toBe("");
    });

    test("putArriving stores a streamed body whole; its etag is the md5 of the bytes when asked", async () => {
      const parts = ["id,name\n", "1,a\n".repeat(50_000), "2,b\n"];
      async function* body() {
        for (const p of parts) yield new TextEncoder().encode(p);
      }
      const info = await store.putArriving("rt/arriving.csv", body(), { contentType: "text/csv" });
      const all = parts.join("");
      expect(info).toMatchObject({ key: "rt/arriving.csv", size: all.length, contentType: "text/csv" });
      expect(await text(await store.get("rt/arriving.csv"))).toBe(all);
      expect((await store.stat("rt/arriving.csv"))!.etag).toBe(md5(all));
    });

    test("a put replaces the object whole", async () => {
      await store.put("rt/replace.txt", "a much longer first version");
      await store.put("rt/replace.txt", "short");
      expect(await text(await store.get("rt/replace.txt"))).toBe("short");
      expect((await store.stat("rt/replace.txt"))!.size).toBe(5);
    });

    test("a streamed body larger than one part is stored byte for byte", async () => {
      const data = pattern(12 * 1024 * 1024 + 333, 1);
      const chunked = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < data.length; i += 64 * 1024) c.enqueue(data.subarray(i, i + 64 * 1024));
          c.close();
        },
      });
      const info = await store.put("rt/large.bin", chunked);
      expect(info.size).toBe(data.length);
      expect(md5(await bytes(await store.get("rt/large.bin")))).toBe(md5(data));
    });

    test("ranges are inclusive, open-ended ranges run to the end, ranges past the end give no bytes", async () => {
      await store.put("rt/range.txt", "0123456789");
      expect(await text(await store.get("rt/range.txt", { range: { start: 2, end: 5 } }))).toBe("2345");
      expect(await text(await store.get("rt/range.txt", { range: { start: 7 } }))).toBe("789");
      expect(await text(await store.get("rt/range.txt", { range: { start: 8, end: 100 } }))).toBe("89");
      expect(await text(await store.get("rt/range.txt", { range: { start: 50 } }))).toBe("");
    });
  });

  describe("list", () => {
    const keys = ["ls/a.txt", "ls/b/1.txt", "ls/b/2.txt", "ls/b-side.txt", "ls/c/deep/3.txt", "ls/d.txt", "lsx/outside.txt"];
    beforeAll(async () => {
      for (const key of keys) await store.put(key, key);
    });

    test("by prefix, in key order (bytes: '-' sorts before '/')", async () => {
      const r = await store.list("ls/");
      expect(r.objects.map((o) => o.key)).toEqual(["ls/a.txt", "ls/b-side.txt", "ls/b/1.txt", "ls/b/2.txt", "ls/c/deep/3.txt", "ls/d.txt"]);
      expect(r.prefixes).toEqual([]);
      expect(r.next).toBeNull();
      expect(r.objects[0]).toMatchObject({ key: "ls/a.txt", size: 8, etag: md5("ls/a.txt") });
    });

    test("with a delimiter: objects at this level and one prefix per folder", async () => {
      const r = await store.list("ls/", { delimiter: "/" });
      expect(r.objects.map((o) => o.key)).toEqual(["ls/a.txt", "ls/b-side.txt", "ls/d.txt"]);
      expect(r.prefixes).toEqual(["ls/b/", "ls/c/"]);
      const top = await store.list("", { delimiter: "/" });
      expect(top.prefixes).toContain("ls/");
      expect(top.prefixes).toContain("lsx/");
    });

    test("a partial last segment matches like a string prefix", async () => {
      expect((await store.list("ls/b")).objects.map((o) => o.key)).toEqual(["ls/b-side.txt", "ls/b/1.txt", "ls/b/2.txt"]);
      expect((await store.list("ls/nothing-here/")).objects).toEqual([]);
    });

    test("pages: `next` fed back as `after` walks everything once, with or without a delimiter", async () => {
      for (const delimiter of [undefined, "/"]) {
        const seen: string[] = [];
        let after: string | undefined;
        let pages = 0;
        do {
          const r = await store.list("ls/", { limit: 2, delimiter, after });
          expect(r.objects.length + r.prefixes.length).toBeLessThanOrEqual(2);
          seen.push(...r.objects.map((o) => o.key), ...r.prefixes);
          after = r.next ?? undefined;
          pages++;
        } while (after && pages < 10);
        const whole = await store.list("ls/", { delimiter });
        expect(seen.sort()).toEqual([...whole.objects.map((o) => o.key), ...whole.prefixes].sort());
        expect(pages).toBe(3);
      }
    });
  });

  describe("copy, move, delete", () => {
    test("copy duplicates bytes and content type, leaving the source", async () => {
      await store.put("cm/src.json", '{"a":1}', { contentType: "application/json" });
      await store.copy("cm/src.json", "cm/copied/dst.json");
      expect(await text(await store.get("cm/copied/dst.json"))).toBe('{"a":1}');
      expect((await store.stat("cm/copied/dst.json"))!.contentType).toBe("application/json");
      expect(await store.stat("cm/src.json")).not.toBeNull();
    });

    test("move leaves the object only at its new key", async () => {
      await store.put("cm/move-me.txt", "moving", { contentType: "text/plain" });
      await store.move("cm/move-me.txt", "cm/moved/here.txt");
      expect(await store.stat("cm/move-me.txt")).toBeNull();
      expect(await text(await store.get("cm/moved/here.txt"))).toBe("moving");
      expect((await store.stat("cm/moved/here.txt"))!.contentType).toBe("text/plain");
    });

    test("copying or moving a missing object is not_found", async () => {
      await expect(store.copy("cm/ghost", "cm/x")).rejects.toMatchObject({ code: "not_found" });
      await expect(store.move("cm/ghost", "cm/x")).rejects.toMatchObject({ code: "not_found" });
      expect(await store.stat("cm/x")).toBeNull();
    });

    test("delete removes one object; deleting a missing one is fine", async () => {
      await store.put("del/one.txt", "1");
      await store.delete("del/one.txt");
      expect(await store.stat("del/one.txt")).toBeNull();
      await store.delete("del/one.txt");
      await store.delete("del/never.txt");
    });

    test("deletePrefix removes everything under the prefix and nothing else, counting", async () => {
      for (const key of ["dp/run/a", "dp/run/b/c", "dp/run/b/d", "dp/runner/keep", "dp/other"]) await store.put(key, key);
      expect(await store.deletePrefix("dp/run/")).toBe(3);
      expect((await store.list("dp/")).objects.map((o) => o.key)).toEqual(["dp/other", "dp/runner/keep"]);
      expect(await store.deletePrefix("dp/run/")).toBe(0);
      await expect(store.deletePrefix("")).rejects.toMatchObject({ code: "invalid_input" });
    });
  });

  describe("presigned links with a plain HTTP client", () => {
    test("GET serves the bytes, as an attachment when named", async () => {
      const info = await store.put("ln/report.csv", "id,name\n1,Ada\n", { contentType: "text/csv" });
      const res = await fetch(await store.presign("ln/report.csv", { method: "GET", expiresIn: 60, filename: "report 2026.csv" }));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-disposition")).toContain('attachment; filename="report 2026.csv"');
      expect(res.headers.get("content-type")).toStartWith("text/csv");
      expect(unquote(res.headers.get("etag"))).toBe(info.etag);
      expect(await res.text()).toBe("id,name\n1,Ada\n");
      const ranged = await fetch(await store.presign("ln/report.csv", { method: "GET", expiresIn: 60 }), { headers: { range: "bytes=8-12" } });
      expect(ranged.status).toBe(206);
      expect(await ranged.text()).toBe("1,Ada");
    });

    test("PUT stores the body and answers its ETag", async () => {
      const url = await store.presign("ln/upload.json", { method: "PUT", expiresIn: 60, contentType: "application/json" });
      const res = await fetch(url, { method: "PUT", body: '[{"id":1}]', headers: { "content-type": "application/json" } });
      expect(res.status).toBe(200);
      expect(unquote(res.headers.get("etag"))).toBe(md5('[{"id":1}]'));
      expect(await store.stat("ln/upload.json")).toMatchObject({ size: 10, contentType: "application/json", etag: md5('[{"id":1}]') });
    });

    test("an expired link is refused with a 403", async () => {
      await store.put("ln/expired.txt", "x");
      const res = await fetch(await subject.expiredLink("ln/expired.txt"));
      expect(res.status).toBe(403);
      await res.arrayBuffer();
    });
  });

  describe("multipart", () => {
    const part1 = pattern(MIN_PART_BYTES, 2);
    const part2 = pattern(1234, 3);

    async function uploadPart(url: string, body: Uint8Array<ArrayBuffer>): Promise<string> {
      const res = await fetch(url, { method: "PUT", body });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const etag = res.headers.get("etag");
      expect(etag).toBeTruthy();
      return etag!;
    }

    test("parts uploaded through presigned URLs, completed with their ETags, make one object", async () => {
      const upload = await store.createMultipart("mp/whole.bin", { contentType: "application/x-ndjson" });
      expect(upload.key).toBe("mp/whole.bin");
      // Out of order on the wire: completion orders by part number.
      const etag2 = await uploadPart(await store.presignPart(upload, 2, 60), part2);
      const etag1 = await uploadPart(await store.presignPart(upload, 1, 60), part1);
      expect(unquote(etag1)).toBe(md5(part1));
      expect(await store.stat("mp/whole.bin")).toBeNull();
      const info = await store.completeMultipart(upload, [
        { partNumber: 1, etag: etag1 },
        { partNumber: 2, etag: etag2 },
      ]);
      expect(info).toMatchObject({ key: "mp/whole.bin", size: part1.length + part2.length, contentType: "application/x-ndjson" });
      const got = await bytes(await store.get("mp/whole.bin"));
      expect(md5(got)).toBe(md5(Buffer.concat([part1, part2])));
    });

    test("a re-sent part replaces the earlier one", async () => {
      const upload = await store.createMultipart("mp/resent.bin");
      const url = await store.presignPart(upload, 1, 60);
      await uploadPart(url, new TextEncoder().encode("first attempt"));
      const etag = await uploadPart(url, new TextEncoder().encode("second attempt"));
      await store.completeMultipart(upload, [{ partNumber: 1, etag }]);
      expect(await text(await store.get("mp/resent.bin"))).toBe("second attempt");
    });

    test("abort discards the parts: nothing appears and the upload cannot be completed", async () => {
      const upload = await store.createMultipart("mp/aborted.bin");
      const etag = await uploadPart(await store.presignPart(upload, 1, 60), part2);
      await store.abortMultipart(upload);
      await expect(store.completeMultipart(upload, [{ partNumber: 1, etag }])).rejects.toThrow();
      expect(await store.stat("mp/aborted.bin")).toBeNull();
      await store.abortMultipart(upload);
    });

    test("parts out of order in the completion list are refused", async () => {
      const upload = await store.createMultipart("mp/order.bin");
      await expect(
        store.completeMultipart(upload, [
          { partNumber: 2, etag: "a" },
          { partNumber: 1, etag: "b" },
        ]),
      ).rejects.toMatchObject({ code: "invalid_input" });
      await store.abortMultipart(upload);
    });
  });

  describe("keys", () => {
    test("escapes are refused before anything is sent or written", async () => {
      for (const key of ["../x", "/abs", "a/../b", "a\\b", "a\u0000b", ""]) {
        await expect(store.put(key, "x")).rejects.toMatchObject({ code: "invalid_input" });
        await expect(store.presign(key, { method: "PUT", expiresIn: 60 })).rejects.toMatchObject({ code: "invalid_input" });
      }
    });

    test("keys with spaces, unicode and reserved URL characters work through links", async () => {
      const key = "odd/ünï cødé #1 ?&=+%.txt";
      await store.put(key, "odd");
      expect((await store.list("odd/")).objects.map((o) => o.key)).toEqual([key]);
      const res = await fetch(await store.presign(key, { method: "GET", expiresIn: 60 }));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("odd");
    });
  });
});

describe("local-only multipart rules (S3's, which s3rver does not enforce)", () => {
  let subject: Subject;
  beforeAll(async () => {
    subject = await localSubject();
  });
  afterAll(() => subject.close());

  test("a wrong ETag or a short non-final part is refused; the ETag has S3's multipart form", async () => {
    const store = subject.store as LocalObjectStore;
    const upload = await store.createMultipart("mp/rules.bin");
    const small = await store.putPart(upload, 1, "tiny");
    const last = await store.putPart(upload, 2, "end");
    await expect(store.completeMultipart(upload, [{ partNumber: 1, etag: md5("other") }])).rejects.toMatchObject({ code: "invalid_input" });
    await expect(
      store.completeMultipart(upload, [
        { partNumber: 1, etag: small.etag },
        { partNumber: 2, etag: last.etag },
      ]),
    ).rejects.toMatchObject({ code: "invalid_input", message: expect.stringContaining("at least") });
    const info = await store.completeMultipart(upload, [{ partNumber: 1, etag: `"${small.etag}"` }]);
    expect(info.etag).toBe(`${md5(Buffer.from(small.etag, "hex"))}-1`);
  });
});
