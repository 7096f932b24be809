import { expect } from "bun:test";
import { spaceKey } from "../../src/services/spaces";
import type { Harness, Reply, TestWorkspace } from "./harness";
import { createPipeline, type PipelineFixture } from "./runs";

/** An outbound pipeline (ITEM_* mappings and schema) on a new hosted connection, or on `connectionId`. */
export function outboundPipeline(
  h: Harness,
  ws: TestWorkspace,
  opts: { connectionName?: string; connectionId?: string; name?: string; mappings?: Record<string, unknown>; isActive?: boolean } = {},
): Promise<PipelineFixture> {
  return createPipeline(h, ws, { ...opts, direction: "outbound" });
}

/** A self-hosted SFTP connection whose server nothing listens on (127.0.0.1:1): every delivery to it fails. */
export async function selfHostedConnection(h: Harness, ws: TestWorkspace, name: string): Promise<{ id: string; name: string }> {
  return h.ok(ws, "POST", "/connections", {
    name,
    type: "SFTP",
    useHostedSFTP: false,
    sftpUsername: "partner",
    sftpPassword: "partner-secret",
    sftpServer: { host: "127.0.0.1", port: 1 },
  });
}

export function startUpload(h: Harness, ws: TestWorkspace, body: Record<string, unknown>, version = "2026-05-25"): Promise<Reply> {
  return h.request("POST", "/outbound/uploads", { key: ws.apiKey, body, version });
}

export function putPart(h: Harness, ws: TestWorkspace, uploadId: string, part: number | string, rows: unknown, opts: { rawBody?: string; headers?: Record<string, string> } = {}) {
  return h.request("PUT", `/outbound/uploads/${uploadId}/parts/${part}`, {
    key: ws.apiKey,
    version: "2026-05-25",
    ...(opts.rawBody !== undefined ? { rawBody: opts.rawBody, headers: { "content-type": "application/json", ...opts.headers } } : { body: rows, headers: opts.headers }),
  });
}

export function complete(h: Harness, ws: TestWorkspace, uploadId: string, parts: number[] | unknown) {
  const body = Array.isArray(parts) && parts.every((p) => typeof p === "number") ? { parts: parts.map((partNumber) => ({ partNumber })) } : parts;
  return h.request("POST", `/outbound/uploads/${uploadId}/complete`, { key: ws.apiKey, version: "2026-05-25", body });
}

/** Sends every part (1-based, in the order given) and completes; returns the completion's body. */
export async function uploadAll(h: Harness, ws: TestWorkspace, uploadId: string, parts: unknown[][]) {
  for (const [i, rows] of parts.entries()) {
    const r = await putPart(h, ws, uploadId, i + 1, rows);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
  const done = await complete(h, ws, uploadId, parts.map((_, i) => i + 1));
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return done.body;
}

/** The bytes of a file in a hosted connection's space (e.g. `outbound/orders.csv`), or null. */
export async function readSpaceFile(h: Harness, ws: TestWorkspace, connectionId: string, path: string): Promise<Uint8Array | null> {
  const body = await h.svc.storage.get(spaceKey(ws.workspaceId, connectionId, path));
  return body ? new Uint8Array(await new Response(body).arrayBuffer()) : null;
}

/** Object keys under a prefix. */
export async function keysUnder(h: Harness, prefix: string): Promise<string[]> {
  return (await h.svc.storage.list(prefix)).objects.map((o) => o.key);
}
