import { expect } from "bun:test";
import type { Harness, Reply, TestWorkspace } from "./harness";

/** A schema of three columns, the mapping from a CSV with headers SKU, Qty, Name, and a CSV that passes it. */
export const ITEM_SCHEMA = {
  type: "object",
  properties: { sku: { type: "string" }, qty: { type: "integer" }, name: { type: "string" } },
  required: ["sku", "qty"],
};
export const ITEM_MAPPINGS = {
  fieldMappings: [
    { source: "SKU", target: "sku", transform: "uppercase" },
    { source: "Qty", target: "qty", transform: "integer" },
    { source: "Name", target: "name", transform: "trim" },
  ],
};
export const ITEMS_CSV = "SKU,Qty,Name\na-1,3, Bolt \nb-2,10,Nut\nc-3,7,Washer\n";

let counter = 0;

export interface PipelineFixture {
  connection: { id: string; name: string };
  schema: { id: string; updatedAt: string };
  pipeline: { id: string; name: string; direction: string; [k: string]: unknown };
}

/** A connection, a schema and a pipeline binding them (inbound, active, ITEM_* defaults unless told). */
export async function createPipeline(
  h: Harness,
  ws: TestWorkspace,
  opts: {
    name?: string;
    connectionName?: string;
    connectionId?: string;
    definition?: Record<string, unknown>;
    mappings?: Record<string, unknown>;
    direction?: "inbound" | "outbound";
    isActive?: boolean;
  } = {},
): Promise<PipelineFixture> {
  const n = ++counter;
  const connection = opts.connectionId
    ? await h.ok(ws, "GET", `/connections/${opts.connectionId}`)
    : await h.ok(ws, "POST", "/connections", { name: opts.connectionName ?? `Partner ${n}`, type: "SFTP", useHostedSFTP: true });
  const schema = await h.ok(ws, "POST", "/schemas", { name: `Items ${n}`, definition: opts.definition ?? ITEM_SCHEMA });
  const pipeline = await h.ok(ws, "POST", "/pipelines", {
    name: opts.name ?? `Items pipeline ${n}`,
    clientId: connection.id,
    schemaId: schema.id,
    direction: opts.direction ?? "inbound",
    isActive: opts.isActive ?? true,
    mappings: opts.mappings ?? ITEM_MAPPINGS,
  });
  return { connection, schema, pipeline };
}

export interface UploadOptions {
  /** The form field carrying the file (default `file`). */
  field?: string;
  type?: string;
  version?: string;
  key?: string | null;
  /** Extra plain form fields. */
  fields?: Record<string, string>;
}

/** `POST /pipelines/{id}/runs` with a multipart form, in process. */
export async function uploadFile(
  h: Harness,
  ws: TestWorkspace,
  pipelineId: string,
  file: { name: string; content: string | Uint8Array },
  opts: UploadOptions = {},
): Promise<Reply> {
  const form = new FormData();
  for (const [k, v] of Object.entries(opts.fields ?? {})) form.append(k, v);
  form.append(opts.field ?? "file", new Blob([file.content as BlobPart], { type: opts.type ?? "text/csv" }), file.name);
  const headers: Record<string, string> = { "service-version": opts.version ?? "2026-05-25" };
  const key = opts.key === undefined ? ws.apiKey : opts.key;
  if (key) headers["x-api-key"] = key;
  const res = await h.service.http.handle(
    new Request(`http://localhost/pipelines/${pipelineId}/runs`, { method: "POST", headers, body: form }),
  );
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, headers: res.headers, body };
}

/** Uploads and expects the new run. */
export async function startUpload(h: Harness, ws: TestWorkspace, pipelineId: string, content = ITEMS_CSV, name = "items.csv") {
  const res = await uploadFile(h, ws, pipelineId, { name, content });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/**
 * Polls `GET /pipeline-runs/{id}` until the run's status is one of
 * `statuses`; fails with the last state seen after `timeoutMs`.
 */
export async function waitForRun(
  h: Harness,
  ws: TestWorkspace,
  runId: string,
  statuses: string | string[],
  opts: { timeoutMs?: number; version?: string } = {},
): Promise<any> {
  const want = Array.isArray(statuses) ? statuses : [statuses];
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  let last: Reply | undefined;
  while (Date.now() < deadline) {
    last = await h.request("GET", `/pipeline-runs/${runId}`, { key: ws.apiKey, version: opts.version ?? "2026-05-25" });
    if (last.status === 200 && want.includes(last.body.status)) return last.body;
    await Bun.sleep(25);
  }
  throw new Error(`run ${runId} did not reach ${want.join("|")} in time; last seen: ${JSON.stringify(last?.body)}`);
}

/** Uploads a file and waits for the run to end (completed, delivered or failed). */
export async function runToEnd(h: Harness, ws: TestWorkspace, pipelineId: string, content = ITEMS_CSV, name = "items.csv") {
  const run = await startUpload(h, ws, pipelineId, content, name);
  return waitForRun(h, ws, run.id, ["completed", "delivered", "failed"]);
}
