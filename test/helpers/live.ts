import type { Server } from "bun";
import { createServer } from "node:net";
import { createGraphqlWebSocket, type GraphqlSocketData } from "../../graphql/ws";
import type { RunEvent } from "../../src/adapters/events/port";
import type { RunStatus } from "../../src/domain/runs";
import { newId } from "../../src/domain/ids";
import { ingest } from "../../src/services/run-path";
import { Harness, type TestWorkspace } from "./harness";
import type { Reader } from "./events";

/** A free port on loopback (for a service whose links must name its port before it listens). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The service on a real port, as src/main.ts serves it: HTTP plus graphql-ws on /graphql. */
export function serve(h: Harness, port = 0): Server<GraphqlSocketData> {
  return Bun.serve({
    port,
    hostname: "127.0.0.1",
    // As src/main.ts: file uploads stream and may be large.
    maxRequestBodySize: 8 * 1024 ** 3,
    ...createGraphqlWebSocket(h.svc, { maxJsonBodyBytes: 1024 * 1024 }).serve((request) => h.service.http.handle(request)),
  });
}

/** A connection, a schema and an active inbound pipeline in the workspace. */
export async function pipelineOf(h: Harness, ws: TestWorkspace, name: string): Promise<string> {
  const conn = await h.ok(ws, "POST", "/connections", { name: `${name} Conn` });
  const schema = await h.ok(ws, "POST", "/schemas", {
    name: `${name} Schema`,
    definition: { type: "object", properties: { sku: { type: "string" } } },
  });
  const pipeline = await h.ok(ws, "POST", "/pipelines", { name: `${name} Pipeline`, clientId: conn.id, schemaId: schema.id });
  return pipeline.id;
}

/** A real run (pending: tests that use this start the service without jobs). */
export async function runOf(h: Harness, ws: TestWorkspace, pipelineId: string, filename = "orders.csv"): Promise<string> {
  const rec = await ingest(h.svc, { door: "upload", workspaceId: ws.workspaceId, pipelineId, filename, body: "sku\nA-1\n" });
  return rec.row.id;
}

export function runEvent(ws: TestWorkspace, runId: string, pipelineId: string, over: Partial<RunEvent> = {}): RunEvent {
  return {
    type: "run.updated",
    id: newId("event"),
    workspaceId: ws.workspaceId,
    runId,
    pipelineId,
    status: "processing" as RunStatus,
    previousStatus: "pending",
    at: h0().toISOString(),
    ...over,
  };
}
const h0 = () => new Date("2026-11-22T10:00:00Z");

/**
 * Waits until a subscription is attached: publishes marker events until one
 * comes through, reading past earlier markers, so that what is published
 * next is seen by the subscriber. `eventIdOf` reads a marker's id out of
 * whatever the transport yields.
 */
export async function attached<T>(reader: Reader<T>, publishMarker: (id: string) => Promise<void>, eventIdOf: (item: T) => string | undefined) {
  for (let i = 0; i < 50; i++) {
    const id = newId("event");
    await publishMarker(id);
    try {
      for (;;) {
        const [item] = await reader.take(1, 200);
        if (eventIdOf(item!) === id) return;
      }
    } catch {}
  }
  throw new Error("the subscription never received a marker event");
}

/** The service on a real port; without jobs unless asked, so that runs stay as a test puts them. */
export async function liveService(opts: { startJobs?: boolean } = {}): Promise<{ h: Harness; server: Server<GraphqlSocketData> }> {
  const h = await Harness.start({ startJobs: opts.startJobs ?? false });
  return { h, server: serve(h) };
}

export async function closeLive(live: { h: Harness; server: Server<GraphqlSocketData> }): Promise<void> {
  live.server.stop(true);
  await live.h.close();
}

/** What the subscription tests start from: the service without jobs; "Owner" with pipeline A and a pending run, "Other" with pipeline X and one of its own. */
export interface LiveWorld {
  h: Harness;
  server: Server<GraphqlSocketData>;
  owner: TestWorkspace;
  other: TestWorkspace;
  pipeA: string;
  runA1: string;
  otherPipe: string;
  runOther: string;
}

export async function liveWorld(): Promise<LiveWorld> {
  const { h, server } = await liveService();
  const owner = await h.workspace({ name: "Owner" });
  const other = await h.workspace({ name: "Other" });
  const pipeA = await pipelineOf(h, owner, "A");
  const otherPipe = await pipelineOf(h, other, "X");
  const runA1 = await runOf(h, owner, pipeA, "a1.csv");
  const runOther = await runOf(h, other, otherPipe, "x.csv");
  return { h, server, owner, other, pipeA, runA1, otherPipe, runOther };
}

/** How many subscriptions the service's event bus holds open now. */
export const subscribers = (h: Harness): number => (h.svc.events as unknown as { subscribers: number }).subscribers;

export async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await Bun.sleep(10);
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}
