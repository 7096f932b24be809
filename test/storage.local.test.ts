import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { createObjectStore } from "../src/adapters/storage";
import { runKeys, safeFilename } from "../src/adapters/storage/keys";
import { LocalObjectStore } from "../src/adapters/storage/local";
import type { StorageConfig } from "../src/adapters/storage/port";
import { Harness } from "./helpers/harness";

/**
 * The local store's own guarantees: links served by the service itself are
 * refused (403, nothing written) when expired, altered or used with another
 * method; keys never leave the root; a failed write leaves nothing behind.
 */
let h: Harness;
let store: LocalObjectStore;

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  store = h.svc.storage as LocalObjectStore;
});
afterAll(() => h.close());

/** Hands a link's path and query to the service in process (its PUBLIC_URL is only for display). */
function fetchLink(url: string, init: RequestInit = {}): Promise<Response> {
  const u = new URL(url);
  expect(u.origin).toBe("http://localhost:3000");
  return Promise.resolve(h.service.http.handle(new Request(`http://localhost${u.pathname}${u.search}`, init)));
}

/** A store sharing the service's root and signing key whose clock is `offsetSeconds` away. */
function storeAt(offsetSeconds: number) {
  return createObjectStore(h.svc.storageConfig, { now: () => Date.now() + offsetSeconds * 1000 }) as LocalObjectStore;
}

async function expectRefused(res: Response, fragment: string) {
  expect(res.status).toBe(403);
  const body = (await res.json()) as { message: string; statusCode: number; error: string };
  expect(body.statusCode).toBe(403);
  expect(body.error).toBe("forbidden");
  expect(body.message).toContain(fragment);
}

describe("the service is wired to the local store", () => {
  test("storage is local under DATA_DIR/objects, with a signing key that is not the encryption key", () => {
    expect(h.svc.storage).toBeInstanceOf(LocalObjectStore);
    const cfg = h.svc.storageConfig;
    expect(cfg.kind).toBe("local");
    if (cfg.kind !== "local") return;
    expect(cfg.root).toBe(join(h.dataDir, "objects"));
    expect(Buffer.from(cfg.signingKey, "base64")).toHaveLength(32);
    expect(cfg.signingKey).not.toBe(h.childEnv().ENCRYPTION_KEY);
  });
});

describe("presigned GET through the service", () => {
  test("serves the bytes with type, length, etag and attachment name; honours Range", async () => {
    const info = await store.put("ws/a/report.csv", "id,name\n1,Ada\n2,Grace\n", { contentType: "text/csv" });
    const url = await store.presign("ws/a/report.csv", { method: "GET", expiresIn: 60, filename: "Report März.csv" });
    const res = await fetchLink(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv");
    expect(res.headers.get("content-length")).toBe(String(info.size));
    expect(res.headers.get("etag")).toBe(`"${info.etag}"`);
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="Report M_rz.csv"; filename*=UTF-8''Report%20M%C3%A4rz.csv`);
    expect(await res.text()).toBe("id,name\n1,Ada\n2,Grace\n");

    const part = await fetchLink(url, { headers: { range: "bytes=8-12" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 8-12/${info.size}`);
    expect(await part.text()).toBe("1,Ada");
    const tail = await fetchLink(url, { headers: { range: "bytes=-6" } });
    expect(await tail.text()).toBe("Grace\n");
    const beyond = await fetchLink(url, { headers: { range: "bytes=999-" } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get("content-range")).toBe(`bytes */${info.size}`);
  });

  test("a link for a missing object is a 404; without a signature it is a 403", async () => {
    const url = await store.presign("ws/a/never-written.csv", { method: "GET", expiresIn: 60 });
    expect((await fetchLink(url)).status).toBe(404);
    await expectRefused(await fetchLink("http://localhost:3000/storage/o/ws/a/report.csv"), "not signed");
  });

  test("expired, altered, and wrong-method links are refused", async () => {
    await store.put("ws/a/secret.txt", "top secret");
    const expired = await storeAt(-120).presign("ws/a/secret.txt", { method: "GET", expiresIn: 60 });
    await expectRefused(await fetchLink(expired), "expired");

    const good = await store.presign("ws/a/secret.txt", { method: "GET", expiresIn: 60, filename: "secret.txt" });
    const otherKey = good.replace("secret.txt?", "report.csv?");
    await expectRefused(await fetchLink(otherKey), "signature");
    const longer = new URL(good);
    longer.searchParams.set("expires", String(Number(longer.searchParams.get("expires")) + 3600));
    await expectRefused(await fetchLink(longer.toString()), "signature");
    const renamed = new URL(good);
    renamed.searchParams.set("filename", "evil.exe");
    await expectRefused(await fetchLink(renamed.toString()), "signature");
    const tampered = new URL(good);
    const sig = tampered.searchParams.get("sig")!;
    tampered.searchParams.set("sig", (sig[0] === "A" ? "B" : "A") + sig.slice(1));
    await expectRefused(await fetchLink(tampered.toString()), "signature");

    // A GET link cannot upload, and an upload link cannot download.
    await expectRefused(await fetchLink(good, { method: "PUT", body: "overwritten" }), "signature");
    const put = await store.presign("ws/a/secret.txt", { method: "PUT", expiresIn: 60 });
    await expectRefused(await fetchLink(put), "signature");
    expect(await new Response(await store.get("ws/a/secret.txt")).text()).toBe("top secret");
  });
});

describe("presigned PUT through the service", () => {
  test("stores the body and answers its ETag; the content type sent is kept", async () => {
    const url = await store.presign("ws/b/upload.json", { method: "PUT", expiresIn: 60 });
    const res = await fetchLink(url, { method: "PUT", body: '[{"a":1}]', headers: { "content-type": "application/json" } });
    expect(res.status).toBe(200);
    const info = await store.stat("ws/b/upload.json");
    expect(res.headers.get("etag")).toBe(`"${info!.etag}"`);
    expect(info!.contentType).toBe("application/json");
    expect(await new Response(await store.get("ws/b/upload.json")).text()).toBe('[{"a":1}]');
  });

  test("refused links write nothing: expired, altered key, wrong content type", async () => {
    const expired = await storeAt(-120).presign("ws/b/nothing.txt", { method: "PUT", expiresIn: 60 });
    await expectRefused(await fetchLink(expired, { method: "PUT", body: "x" }), "expired");
    const good = await store.presign("ws/b/nothing.txt", { method: "PUT", expiresIn: 60, contentType: "text/plain" });
    await expectRefused(await fetchLink(good.replace("nothing.txt", "elsewhere.txt"), { method: "PUT", body: "x", headers: { "content-type": "text/plain" } }), "signature");
    await expectRefused(await fetchLink(good, { method: "PUT", body: "x", headers: { "content-type": "text/html" } }), "content-type");
    expect(await store.stat("ws/b/nothing.txt")).toBeNull();
    expect(await store.stat("ws/b/elsewhere.txt")).toBeNull();
    const ok = await fetchLink(good, { method: "PUT", body: "x", headers: { "content-type": "text/plain; charset=utf-8" } });
    expect(ok.status).toBe(200);
  });

  test("a body larger than the upload limit is refused and leaves no object", async () => {
    const small = await Harness.start({ startJobs: false, env: { MAX_UPLOAD_BYTES: "1000" } });
    try {
      const s = small.svc.storage as LocalObjectStore;
      const url = new URL(await s.presign("big.bin", { method: "PUT", expiresIn: 60 }));
      // Sent as a stream of unknown length, so the limit is enforced while reading, not from the header.
      const body = new ReadableStream({
        start(c) {
          for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(400));
          c.close();
        },
      });
      const res = await small.service.http.handle(new Request(`http://localhost${url.pathname}${url.search}`, { method: "PUT", body, duplex: "half" } as RequestInit));
      expect(res.status).toBe(413);
      expect(await s.stat("big.bin")).toBeNull();
      expect(readdirSync(join(s.root, ".fps", "tmp"))).toEqual([]);
    } finally {
      await small.close();
    }
  });
});

describe("keys stay inside the root", () => {
  const escapes = ["../outside", "a/../../outside", "/etc/passwd", "a\\..\\..\\outside", "a\u0000b", "a//b", "./a", "a/./b", "a/", "", ".fps/meta/x"];
  test.each(escapes)("%j is refused on every operation", async (key) => {
    const ops = [
      () => store.put(key, "x"),
      () => store.get(key),
      () => store.stat(key),
      () => store.delete(key),
      () => store.copy("ws/a/report.csv", key),
      () => store.move(key, "ws/a/moved"),
      () => store.presign(key, { method: "PUT", expiresIn: 60 }),
      () => store.createMultipart(key),
    ];
    for (const op of ops) await expect(op()).rejects.toMatchObject({ code: "invalid_input" });
  });

  test("prefixes are checked the same way", async () => {
    for (const prefix of ["../", "/", "a/../", ".fps/"]) {
      await expect(store.list(prefix)).rejects.toMatchObject({ code: "invalid_input" });
      await expect(store.deletePrefix(prefix)).rejects.toMatchObject({ code: "invalid_input" });
    }
    await expect(store.deletePrefix("")).rejects.toMatchObject({ code: "invalid_input" });
  });

  test("a link whose path climbs out is refused, not followed", async () => {
    const url = new URL(await store.presign("ws/a/report.csv", { method: "GET", expiresIn: 60 }));
    // Encoded slashes reach the route as part of a segment: the key differs from the signed one.
    for (const path of ["/storage/o/..%2F..%2Fservice.db", "/storage/o/ws%2Fa%2Freport.csv%00", "/storage/o/%ZZ"]) {
      const res = await h.service.http.handle(new Request(`http://localhost${path}${url.search}`));
      expect(res.status).toBe(403);
    }
    // Dot segments are resolved by URL parsing before routing: the path leaves /storage/o/ and matches nothing.
    const dotted = await h.service.http.handle(new Request(`http://localhost/storage/o/ws/a/%2e%2e/%2e%2e/%2e%2e/service.db${url.search}`));
    expect(dotted.status).toBe(404);
  });

  test("runKeys builds keys the store accepts, from any file name", async () => {
    const k = runKeys("ws_1", "run_2", "../../etc/passwd");
    expect(k).toEqual({
      prefix: "ws/ws_1/runs/run_2/",
      original: "ws/ws_1/runs/run_2/original/passwd",
      processed: "ws/ws_1/runs/run_2/processed.json",
      rejects: "ws/ws_1/runs/run_2/rejects.json",
    });
    expect(runKeys("w", "r", "x.csv", { processedExtension: "csv" }).processed).toBe("ws/w/runs/r/processed.csv");
    expect(safeFilename("..")).toBe("file");
    expect(safeFilename("C:\\Users\\me\\orders.csv")).toBe("orders.csv");
    expect(() => runKeys("../x", "r", "f")).toThrow();
    await store.put(runKeys("w", "r", "a\u0001b.csv").original, "ok");
    expect(await store.stat("ws/w/runs/r/original/ab.csv")).not.toBeNull();
  });
});

describe("atomic writes", () => {
  test("a body that fails half-way leaves no object, the previous one intact, and no temp file", async () => {
    await store.put("ws/c/data.csv", "old contents");
    const failing = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(2 * 1024 * 1024).fill(65));
        c.error(new Error("connection reset"));
      },
    });
    await expect(store.put("ws/c/data.csv", failing)).rejects.toThrow("connection reset");
    await expect(store.put("ws/c/fresh.csv", (async function* () {
      yield new Uint8Array(3 * 1024 * 1024);
      throw new Error("client went away");
    })())).rejects.toThrow("client went away");
    expect(await new Response(await store.get("ws/c/data.csv")).text()).toBe("old contents");
    expect(await store.stat("ws/c/fresh.csv")).toBeNull();
    const listed = await store.list("ws/c/");
    expect(listed.objects.map((o) => o.key)).toEqual(["ws/c/data.csv"]);
    expect(readdirSync(join(store.root, ".fps", "tmp"))).toEqual([]);
    expect((await store.list("")).objects.some((o) => o.key.startsWith(".fps"))).toBe(false);
  });

  test("a body of thousands of tiny chunks is written whole and in order (batched writes)", async () => {
    const parts = Array.from({ length: 3000 }, (_, i) => `${i},`);
    const info = await store.put("ws/c/tiny-chunks.csv", (async function* () {
      for (const p of parts) yield new TextEncoder().encode(p);
    })());
    expect(info.size).toBe(parts.join("").length);
    expect(await new Response(await store.get("ws/c/tiny-chunks.csv")).text()).toBe(parts.join(""));
  });

  test("a reader that opened the object keeps reading the old bytes while a new version lands", async () => {
    await store.put("ws/c/big.bin", new Uint8Array(1024 * 1024).fill(1));
    const reading = await store.get("ws/c/big.bin");
    await store.put("ws/c/big.bin", new Uint8Array(10).fill(2));
    const bytes = new Uint8Array(await new Response(reading).arrayBuffer());
    expect(bytes.length).toBe(1024 * 1024);
    expect(bytes.every((b) => b === 1)).toBe(true);
    expect((await store.stat("ws/c/big.bin"))!.size).toBe(10);
  });

  test("metadata that no longer matches the file (a crash between the renames) is recomputed, not trusted", async () => {
    const first = await store.put("ws/c/meta.txt", "first");
    await Bun.write(join(store.root, "ws", "c", "meta.txt"), "second, written behind the store's back");
    const info = await store.stat("ws/c/meta.txt");
    expect(info!.etag).not.toBe(first.etag);
    expect(info!.etag).toBe(new Bun.CryptoHasher("md5").update("second, written behind the store's back").digest("hex"));
  });

  test("putArriving tells its observer the temp file, each write and the final size, before the object is in place", async () => {
    const seen: string[] = [];
    let path = "";
    const chunk = new Uint8Array(300 * 1024).fill(65);
    async function* body() {
      for (let i = 0; i < 8; i++) yield chunk;
    }
    const total = 8 * chunk.byteLength;
    const info = await store.putArriving("ws/arriving/a.csv", body(), {
      observe: {
        opened(p) {
          path = p;
          seen.push("opened");
        },
        wrote(n) {
          // The bytes reported are in the file already.
          expect(statSync(path).size).toBeGreaterThanOrEqual(n);
          seen.push(`wrote ${n}`);
        },
        done(n) {
          expect(existsSync(join(store.root, "ws/arriving/a.csv"))).toBe(false);
          seen.push(`done ${n}`);
        },
      },
    });
    expect(dirname(path)).toBe(join(store.root, ".fps", "tmp"));
    expect(seen[0]).toBe("opened");
    expect(seen.at(-1)).toBe(`done ${total}`);
    const wrote = seen.filter((x) => x.startsWith("wrote")).map((x) => Number(x.split(" ")[1]));
    expect(wrote.length).toBeGreaterThan(1);
    expect(wrote).toEqual([...wrote].sort((a, b) => a - b));
    expect(wrote.at(-1)).toBe(total);
    expect(info.size).toBe(total);
    expect(existsSync(path)).toBe(false);
    expect((await store.stat("ws/arriving/a.csv"))!.etag).toBe(new Bun.CryptoHasher("md5").update(new Uint8Array(total).fill(65)).digest("hex"));
  });

  test("a file put by putFile (the engine's outputs) gets the md5 of its bytes as etag when first asked for, with the content type it was given", async () => {
    const body = '[\n{"id":1},\n{"id":2}\n]\n';
    const md5 = new Bun.CryptoHasher("md5").update(body).digest("hex");
    const putFile = async (key: string) => {
      const tmp = join(store.root, ".fps", "tmp", `putfile-${key.replace(/\W/g, "_")}`);
      await Bun.write(tmp, body);
      const put = await store.putFile(key, tmp, { contentType: "application/json" });
      expect(put).toMatchObject({ key, size: body.length });
      expect((put as { etag?: string }).etag).toBeUndefined();
    };
    // exists (what a run's download link checks) does not compute it.
    await putFile("ws/d/linked.out");
    expect(await store.exists("ws/d/linked.out")).toBe(true);
    const h = new Bun.CryptoHasher("sha256").update("ws/d/linked.out").digest("hex");
    const metaFile = join(store.root, ".fps", "meta", h.slice(0, 2), `${h}.json`);
    expect((await Bun.file(metaFile).json()).etag).toBeUndefined();
    // First asked for by a GET link.
    const res = await fetchLink(await store.presign("ws/d/linked.out", { method: "GET", expiresIn: 60 }));
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe(`"${md5}"`);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe(body);
    expect(await store.stat("ws/d/linked.out")).toMatchObject({ etag: md5, contentType: "application/json" });
    expect((await Bun.file(metaFile).json()).etag).toBe(md5);
    // First asked for by a listing, then by stat: the same.
    await putFile("ws/d/listed.out");
    const listed = await store.list("ws/d/");
    expect(listed.objects.map((o) => [o.key, o.etag, o.contentType])).toEqual([
      ["ws/d/linked.out", md5, "application/json"],
      ["ws/d/listed.out", md5, "application/json"],
    ]);
    expect(await store.stat("ws/d/listed.out")).toMatchObject({ size: body.length, etag: md5, contentType: "application/json" });
  });

  test("a key cannot be both an object and a folder on disk: conflict, nothing lost", async () => {
    await store.put("ws/d/x", "file");
    await expect(store.put("ws/d/x/y", "nested")).rejects.toMatchObject({ code: "conflict" });
    expect(await new Response(await store.get("ws/d/x")).text()).toBe("file");
    expect(readdirSync(join(store.root, ".fps", "tmp"))).toEqual([]);
  });

  test("sweep removes abandoned temp files and uploads", async () => {
    const upload = await store.createMultipart("ws/e/abandoned.bin");
    await store.putPart(upload, 1, "part");
    expect(await storeAt(3600).sweep(60_000)).toBeGreaterThanOrEqual(1);
    await expect(store.completeMultipart(upload, [{ partNumber: 1, etag: "x" }])).rejects.toMatchObject({ code: "not_found" });
  });
});

/**
 * Written files leave the page cache once on disk (STORAGE_CACHE_WRITES=false,
 * the default; src/adapters/storage/page-cache.ts). What is cached is read
 * with util-linux's fincore; the bytes must read back whole either way.
 */
describe("written files and the page cache", () => {
  const cachedBytes = (path: string): number => {
    const p = Bun.spawnSync(["fincore", "--bytes", "--noheadings", "--output", "RES", path]);
    if (p.exitCode !== 0) throw new Error(`fincore: ${p.stderr.toString()}`);
    return Number(p.stdout.toString().trim());
  };
  const storeWith = (dropWritten: boolean) => createObjectStore({ ...(h.svc.storageConfig as Extract<StorageConfig, { kind: "local" }>), dropWritten }) as LocalObjectStore;
  const pathOf = (key: string) => join(store.root, ...key.split("/"));
  const bytes = () => crypto.getRandomValues(new Uint8Array(4 * 1024 * 1024));
  const sha = (b: Uint8Array | ArrayBuffer) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
  const chunked = (parts: Uint8Array[]) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(p);
        c.close();
      },
    });

  test("the service's store drops them (the default), and so do the settings the engine's requests carry to its workers", () => {
    expect(h.svc.storageConfig).toMatchObject({ kind: "local", dropWritten: true });
    expect(store.dropWritten).toBe(true);
  });

  test("put: a store that drops leaves none of the object cached, one that keeps leaves all of it; both read back whole", async () => {
    const parts = [bytes(), bytes(), bytes()];
    const whole = sha(Buffer.concat(parts));
    await storeWith(true).put("ws/pc/dropped.bin", chunked(parts));
    await storeWith(false).put("ws/pc/kept.bin", chunked(parts));
    expect(cachedBytes(pathOf("ws/pc/dropped.bin"))).toBe(0);
    expect(cachedBytes(pathOf("ws/pc/kept.bin"))).toBe(12 * 1024 * 1024);
    for (const key of ["ws/pc/dropped.bin", "ws/pc/kept.bin"]) {
      expect(sha(await new Response(await store.get(key)).arrayBuffer())).toBe(whole);
      expect((await store.stat(key))?.size).toBe(12 * 1024 * 1024);
    }
  });

  test("the engine's outputs: written through the main-thread sink (a datasync every 32 MiB) and put in place, none of them cached", async () => {
    const { openAsyncFileSink } = await import("../src/engine/write/sink");
    const dropping = storeWith(true);
    const sink = openAsyncFileSink(dropping.files, "ws/pc/processed.json", "application/json");
    const hasher = new Bun.CryptoHasher("sha256");
    for (let i = 0; i < 10; i++) {
      const b = bytes();
      hasher.update(b);
      await sink.writeForeign(b);
    }
    const info = await sink.close();
    expect(info.size).toBe(40 * 1024 * 1024);
    expect(cachedBytes(pathOf("ws/pc/processed.json"))).toBe(0);
    expect(sha(await new Response(await store.get("ws/pc/processed.json")).arrayBuffer())).toBe(hasher.digest("hex"));
  });
});
