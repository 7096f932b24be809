import { runKeys } from "../../src/adapters/storage/keys";
import { newId } from "../../src/domain/ids";
import type { RunMetadata } from "../../src/domain/runs";
import type { Harness, TestWorkspace } from "./harness";

/**
 * Runs made directly in the database, with their files written to the
 * object store in the engine's layout, so the files and delta APIs can be
 * tested on exact data without going through upload and processing.
 */

export interface FixturePipeline {
  id: string;
  name: string;
  connectionId: string;
  connectionName: string;
  schemaId: string;
}

let counter = 0;

export async function fixturePipeline(h: Harness, ws: TestWorkspace, opts: { name?: string; connectionName?: string } = {}): Promise<FixturePipeline> {
  const n = ++counter;
  const connection = await h.ok(ws, "POST", "/connections", { name: opts.connectionName ?? `Fixture partner ${n}`, type: "SFTP", useHostedSFTP: true });
  const schema = await h.ok(ws, "POST", "/schemas", { name: `Fixture rows ${n}`, definition: { type: "object", properties: {} } });
  const pipeline = await h.ok(ws, "POST", "/pipelines", { name: opts.name ?? `Fixture pipeline ${n}`, clientId: connection.id, schemaId: schema.id });
  return { id: pipeline.id, name: pipeline.name, connectionId: connection.id, connectionName: connection.name, schemaId: schema.id };
}

/** The engine's processed JSON layout: `[`, one object a line joined by `,`, `]`. */
export function processedJson(rows: readonly object[]): string {
  return rows.length === 0 ? "[\n]\n" : `[\n${rows.map((r) => JSON.stringify(r)).join(",\n")}\n]\n`;
}

/** Text delivered as a stream in chunks of `chunk` bytes, so lines and characters get cut anywhere. */
export function chunkedStream(text: string, chunk: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.slice(at, at + chunk));
      at += chunk;
    },
  });
}

export interface FixtureRunOptions {
  /** Rows of the processed file; null: the run has none yet (it is processing). */
  rows: readonly object[] | null;
  filename?: string;
  original?: string;
  status?: string;
  processedAt?: Date;
  /** Written as the processed file instead of `rows` (rows then only decide that there is one). */
  processedText?: string;
  /** Extension of the processed file (json unless told). */
  processedExtension?: string;
  /** Large files: the processed file's bytes as a stream, with its row count (then `rows` only needs to be non-null). */
  processedBody?: { chunks: AsyncIterable<Uint8Array>; rows: number };
}

export interface FixtureRun {
  id: string;
  filename: string;
  originalKey: string;
  processedKey: string | null;
  processedText: string | null;
  original: string;
}

export async function fixtureRun(h: Harness, ws: TestWorkspace, p: FixturePipeline, opts: FixtureRunOptions): Promise<FixtureRun> {
  const id = newId("run");
  const filename = opts.filename ?? "orders.csv";
  const keys = runKeys(ws.workspaceId, id, filename, { processedExtension: opts.processedExtension ?? "json" });
  const original = opts.original ?? "SKU,Qty\nA-1,3\n";
  await h.svc.storage.put(keys.original, original, { contentType: "text/csv" });
  let processedText: string | null = null;
  let metadata: RunMetadata = {};
  if (opts.processedBody) {
    const info = await h.svc.storage.put(keys.processed, opts.processedBody.chunks, { contentType: "application/json" });
    metadata = { output: { format: "json", size: info.size, rows: opts.processedBody.rows } };
  } else if (opts.rows) {
    processedText = opts.processedText ?? processedJson(opts.rows);
    await h.svc.storage.put(keys.processed, processedText, { contentType: "application/json" });
    const n = opts.rows.length;
    metadata = { rows: { total: n, valid: n, invalid: 0, skipped: 0, quarantined: 0 }, output: { format: opts.processedExtension ?? "json", size: processedText.length, rows: n } };
  }
  const now = h.clock.now();
  await h.svc.db.tx((w) =>
    w.insert(h.svc.db.t.pipelineRuns).values({
      id,
      workspaceId: ws.workspaceId,
      pipelineId: p.id,
      pipelineName: p.name,
      connectionId: p.connectionId,
      connectionName: p.connectionName,
      schemaId: p.schemaId,
      direction: "inbound",
      status: opts.status ?? (opts.rows ? "completed" : "processing"),
      source: "upload",
      filename,
      path: `/${filename}`,
      size: original.length,
      mimetype: "text/csv",
      originalKey: keys.original,
      processedKey: opts.rows ? keys.processed : null,
      rejectsKey: null,
      metadata,
      errorMessage: null,
      attempt: 1,
      idempotencyKey: null,
      processedAt: opts.rows ? (opts.processedAt ?? now) : null,
      createdAt: now,
      updatedAt: now,
    }),
  );
  return { id, filename, originalKey: keys.original, processedKey: opts.rows ? keys.processed : null, processedText, original };
}

/** Fetches a presigned link the way a plain HTTP client would, through the service's own handler. */
export async function fetchLink(h: Harness, url: string, init?: RequestInit): Promise<Response> {
  const u = new URL(url);
  return h.service.http.handle(new Request(`http://localhost${u.pathname}${u.search}`, init));
}
