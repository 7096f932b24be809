import { expect } from "bun:test";
import { createHash } from "node:crypto";
import { createKey } from "../../src/services/keys/create-key";
import { authenticate } from "../../src/services/keys/authenticate";
import { Harness, type TestWorkspace } from "./harness";

/**
 * The documents tests use presigned links with plain `fetch`, as a partner's
 * HTTP client would, so the service listens on a real port and its links
 * (PUBLIC_URL) point there. With S3 settings the links point at the bucket.
 */
export interface Listening {
  h: Harness;
  origin: string;
  close(): Promise<void>;
}

export const MiB = 1024 * 1024;

export async function listeningHarness(env: Record<string, string> = {}, opts: { startJobs?: boolean } = {}): Promise<Listening> {
  let handle: (r: Request) => Response | Promise<Response> = () => new Response("starting", { status: 503 });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, maxRequestBodySize: 256 * MiB, fetch: (r) => handle(r) });
  const origin = server.url.origin;
  const h = await Harness.start({ startJobs: opts.startJobs ?? false, env: { PUBLIC_URL: origin, ...env } });
  handle = (r) => h.service.http.handle(r);
  return {
    h,
    origin,
    async close() {
      server.stop(true);
      await h.close();
    },
  };
}

/** A member (non-admin) key of the workspace. */
export async function memberOf(h: Harness, ws: TestWorkspace): Promise<TestWorkspace> {
  const key = await createKey(h.svc, { workspaceId: ws.workspaceId, role: "member", name: "member" });
  const actor = await authenticate(h.svc, { apiKey: key.apiKey });
  return { workspaceId: ws.workspaceId, apiKey: key.apiKey, keyId: key.id, actor };
}

/** A hosted connection, and optionally pipelines in the given directions on it. */
export async function connectionWith(h: Harness, ws: TestWorkspace, name: string, directions: ("inbound" | "outbound")[] = []): Promise<string> {
  const conn = await h.ok(ws, "POST", "/connections", { name, type: "SFTP", useHostedSFTP: true });
  if (directions.length > 0) {
    const schema = await h.ok(ws, "POST", "/schemas", { name: `${name} rows`, definition: { type: "object", properties: { a: { type: "string" } } } });
    for (const direction of directions) {
      await h.ok(ws, "POST", "/pipelines", { name: `${name} ${direction}`, clientId: conn.id, schemaId: schema.id, direction });
    }
  }
  return conn.id;
}

export const md5 = (b: Uint8Array | string) => createHash("md5").update(b).digest("hex");
export const unquote = (etag: string | null) => (etag ?? "").replace(/"/g, "");

/** Deterministic bytes that do not repeat in an obvious way, so a misplaced part shows. */
export function pattern(size: number, seed: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(size);
  let x = (seed * 2654435761) >>> 0;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

export interface Ticket {
  mode: "single" | "multipart";
  path: string;
  url?: string;
  headers: Record<string, string>;
  uploadId?: string;
  parts?: { partNumber: number; url: string }[];
  partSize?: number;
  expiresIn: number;
}

/** PUTs a `single` ticket's body with the headers it names; answers the reply. */
export async function putSingle(ticket: Ticket, body: Uint8Array<ArrayBuffer> | string): Promise<Response> {
  expect(ticket.mode).toBe("single");
  return fetch(ticket.url!, { method: "PUT", headers: ticket.headers, body });
}

/** PUTs every part of a `multipart` ticket (in the order given by `order`, default last first); answers the parts for completion. */
export async function putParts(ticket: Ticket, body: Uint8Array<ArrayBuffer>, order?: number[]): Promise<{ partNumber: number; etag: string }[]> {
  expect(ticket.mode).toBe("multipart");
  const parts = ticket.parts!;
  const size = ticket.partSize!;
  const sequence = order ?? parts.map((p) => p.partNumber).reverse();
  const etags = new Map<number, string>();
  for (const n of sequence) {
    const part = parts[n - 1]!;
    const res = await fetch(part.url, { method: "PUT", headers: ticket.headers, body: body.subarray((n - 1) * size, Math.min(body.length, n * size)) });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
    etags.set(n, res.headers.get("etag")!);
  }
  return parts.map((p) => ({ partNumber: p.partNumber, etag: etags.get(p.partNumber)! }));
}

/** Downloads through a link with plain fetch. */
export async function download(url: string): Promise<{ status: number; bytes: Uint8Array; headers: Headers }> {
  const res = await fetch(url);
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), headers: res.headers };
}
