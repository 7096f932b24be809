import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Client, createClient } from "graphql-ws";
import type { GraphqlSocketData } from "../graphql/ws";
import { createKey } from "../src/services/keys/create-key";
import { revokeKey } from "../src/services/keys/revoke-key";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { Reader, sseMessages } from "./helpers/events";
import { attached, closeLive, type LiveWorld, liveWorld, subscribers as liveSubscribers, pipelineOf, runEvent, runOf, until } from "./helpers/live";

/**
 * GraphQL subscriptions to run updates over graphql-ws (WebSocket on
 * /graphql) and over SSE, against a real server: only the caller's
 * workspace's runs arrive, each with the run as REST presents it; keys are
 * checked like every other /graphql request.
 */

// biome-ignore lint/suspicious/noExplicitAny: results are checked member by member
type Any = any;

let h: Harness;
let server: Server<GraphqlSocketData>;
let owner: TestWorkspace;
let other: TestWorkspace;
let pipeA = "";
let pipeB = "";
let runA1 = "";
let runA2 = "";
let runOther = "";
let otherPipe = "";
const clients: Client[] = [];

const RUN_UPDATED = `subscription($runId: ID, $pipelineId: ID) {
  runUpdated(runId: $runId, pipelineId: $pipelineId) {
    event { type id workspaceId runId pipelineId status previousStatus at missed }
    run { id status pipelineId filename client { name } createdAt updatedAt }
  }
}`;

let world: LiveWorld;

beforeAll(async () => {
  world = await liveWorld();
  ({ h, server, owner, other, pipeA, runA1, otherPipe, runOther } = world);
  pipeB = await pipelineOf(h, owner, "B");
  runA2 = await runOf(h, owner, pipeB, "a2.csv");
});

afterAll(async () => {
  for (const c of clients) await c.dispose();
  await closeLive(world);
});

const wsUrl = () => `ws://127.0.0.1:${server.port}/graphql`;
const httpUrl = () => `http://127.0.0.1:${server.port}/graphql`;

function client(connectionParams?: Record<string, unknown>, webSocketImpl: unknown = WebSocket): Client {
  const c = createClient({ url: wsUrl(), webSocketImpl, connectionParams, retryAttempts: 0, lazy: true });
  clients.push(c);
  return c;
}

/** A WebSocket that sends the key as a header on the upgrade request (Bun's WebSocket can). */
const withHeaderKey = (key: string) =>
  class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, { protocols, headers: { "x-api-key": key } } as never);
    }
  };

const subscribers = () => liveSubscribers(h);

/** Subscribes over WebSocket and waits until events published from now on reach it. */
async function wsSubscribe(ws: TestWorkspace, variables: Record<string, unknown> = {}, marker = { runId: runA1, pipelineId: pipeA }) {
  const it = client({ "x-api-key": ws.apiKey }).iterate({ query: RUN_UPDATED, variables });
  const reader = new Reader(it);
  await attached(
    reader,
    (id) => h.svc.events.publish(runEvent(ws, marker.runId, marker.pipelineId, { id })),
    (r: Any) => r.data?.runUpdated.event.id,
  );
  return { reader, it };
}

const presentedRun = async (ws: TestWorkspace, id: string) => {
  const r = await h.graphql(ws.apiKey, "query($id: ID!) { run(id: $id) { id status pipelineId filename client { name } createdAt updatedAt } }", { id });
  expect(r.body.errors).toBeUndefined();
  return r.body.data.run;
};

describe("graphql-ws", () => {
  test("the whole workspace: every run's events with the run, nothing of another workspace", async () => {
    const { reader, it } = await wsSubscribe(owner);
    const e1 = runEvent(owner, runA1, pipeA, { status: "processing", previousStatus: "pending" });
    const foreign = runEvent(other, runOther, otherPipe);
    const e2 = runEvent(owner, runA2, pipeB, { status: "failed", previousStatus: "processing" });
    await h.svc.events.publish(e1);
    await h.svc.events.publish(foreign);
    await h.svc.events.publish(e2);
    const [r1, r2] = (await reader.take(2)) as Any[];
    expect(r1.errors).toBeUndefined();
    expect(r1.data.runUpdated.event).toEqual({ ...e1, missed: null });
    expect(r1.data.runUpdated.run).toEqual(await presentedRun(owner, runA1));
    expect(r2.data.runUpdated.event).toEqual({ ...e2, missed: null });
    expect(r2.data.runUpdated.run).toEqual(await presentedRun(owner, runA2));
    expect(await reader.quiet(200)).toBe(true);
    await it.return?.();
  });

  test("runId narrows to one run, pipelineId to one pipeline's runs", async () => {
    const one = await wsSubscribe(owner, { runId: runA2 }, { runId: runA2, pipelineId: pipeB });
    const pipe = await wsSubscribe(owner, { pipelineId: pipeA }, { runId: runA1, pipelineId: pipeA });
    const forA1 = runEvent(owner, runA1, pipeA, { status: "completed", previousStatus: "processing" });
    const forA2 = runEvent(owner, runA2, pipeB, { status: "completed", previousStatus: "processing" });
    await h.svc.events.publish(forA1);
    await h.svc.events.publish(forA2);
    expect(((await one.reader.take(1)) as Any[])[0].data.runUpdated.event.id).toBe(forA2.id);
    expect(((await pipe.reader.take(1)) as Any[])[0].data.runUpdated.event.id).toBe(forA1.id);
    expect(await one.reader.quiet(200)).toBe(true);
    expect(await pipe.reader.quiet(10)).toBe(true);
    await one.it.return?.();
    await pipe.it.return?.();
  });

  test("another workspace's run or pipeline is NOT_FOUND, a bad id is BAD_USER_INPUT", async () => {
    const c = client({ "x-api-key": owner.apiKey });
    for (const [variables, code, message] of [
      [{ runId: runOther }, "NOT_FOUND", runOther],
      [{ pipelineId: otherPipe }, "NOT_FOUND", otherPipe],
      [{ runId: "" }, "BAD_USER_INPUT", "runId: must not be empty"],
    ] as const) {
      const results: Any[] = [];
      for await (const r of c.iterate({ query: RUN_UPDATED, variables })) results.push(r);
      expect(results).toHaveLength(1);
      expect(results[0].data ?? null).toBeNull();
      expect(results[0].errors[0].extensions.code).toBe(code);
      expect(results[0].errors[0].message).toContain(message);
    }
  });

  test("a real status change (acknowledging a run) arrives with the acknowledged run", async () => {
    const { reader, it } = await wsSubscribe(owner, { runId: runA1 });
    const ack = await h.graphql(owner.apiKey, "mutation($id: ID!) { acknowledgeRun(id: $id) { id status } }", { id: runA1 });
    expect(ack.body.errors).toBeUndefined();
    const [r] = (await reader.take(1)) as Any[];
    expect(r.data.runUpdated.event).toMatchObject({ runId: runA1, pipelineId: pipeA, status: "acknowledged", workspaceId: owner.workspaceId });
    expect(r.data.runUpdated.event.previousStatus).not.toBe("acknowledged");
    expect(r.data.runUpdated.run.status).toBe("acknowledged");
    await it.return?.();
  });

  test("ending the subscription detaches it from the bus; so does closing the socket", async () => {
    await until(() => subscribers() === 0, "earlier subscriptions to end");
    const c = client({ "x-api-key": owner.apiKey });
    const reader = new Reader(c.iterate({ query: RUN_UPDATED }));
    await attached(
      reader,
      (id) => h.svc.events.publish(runEvent(owner, runA1, pipeA, { id })),
      (r: Any) => r.data?.runUpdated.event.id,
    );
    expect(subscribers()).toBe(1);
    await c.dispose();
    await until(() => subscribers() === 0, "the bus subscription to end after the socket closed");
  });

  test("queries and mutations work over the socket too", async () => {
    const c = client({ "x-api-key": owner.apiKey });
    const results: Any[] = [];
    for await (const r of c.iterate({ query: "query($id: ID!) { run(id: $id) { id pipelineId } }", variables: { id: runA2 } })) results.push(r);
    expect(results).toEqual([{ data: { run: { id: runA2, pipelineId: pipeB } } }]);
  });
});

describe("graphql-ws authentication", () => {
  /** The close code the client saw when the server refused the connection. */
  async function closeCode(c: Client): Promise<number> {
    try {
      for await (const _ of c.iterate({ query: RUN_UPDATED })) return -1;
      return 0;
    } catch (e) {
      return (e as { code: number }).code;
    }
  }

  test("no key, an unknown key, a revoked key: the connection is refused (4403)", async () => {
    const extra = await createKey(h.svc, { workspaceId: owner.workspaceId, role: "member", name: "to revoke" });
    await revokeKey(h.svc, { keyId: extra.id, workspaceId: owner.workspaceId });
    expect(await closeCode(client())).toBe(4403);
    expect(await closeCode(client({ "x-api-key": "fps_live_not-a-real-key" }))).toBe(4403);
    expect(await closeCode(client({ "x-api-key": extra.apiKey }))).toBe(4403);
    expect(subscribers()).toBe(0);
  });

  test("the key may come as the upgrade request's header", async () => {
    const c = client(undefined, withHeaderKey(owner.apiKey));
    const reader = new Reader(c.iterate({ query: RUN_UPDATED }));
    await attached(
      reader,
      (id) => h.svc.events.publish(runEvent(owner, runA1, pipeA, { id })),
      (r: Any) => r.data?.runUpdated.event.id,
    );
    const foreign = runEvent(other, runOther, otherPipe);
    const mine = runEvent(owner, runA2, pipeB);
    await h.svc.events.publish(foreign);
    await h.svc.events.publish(mine);
    expect(((await reader.take(1)) as Any[])[0].data.runUpdated.event.id).toBe(mine.id);
    await c.dispose();
  });

  test("a bad key in the upgrade header: 401 like any /graphql request, no socket", async () => {
    const res = await fetch(httpUrl(), {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64"),
        "sec-websocket-protocol": "graphql-transport-ws",
        "x-api-key": "fps_live_not-a-real-key",
      },
    });
    expect(res.status).toBe(401);
    const body = (await res.json()) as Any;
    expect(body.errors[0].extensions).toMatchObject({ code: "UNAUTHENTICATED", error: "unauthorized", statusCode: 401 });
    const rest = await h.request("GET", "/connections", { key: "fps_live_not-a-real-key" });
    expect(body.errors[0].message).toBe(rest.body.message);
  });

  test("a key revoked after connecting starts nothing more on that socket", async () => {
    const extra = await createKey(h.svc, { workspaceId: owner.workspaceId, role: "member", name: "revoked later" });
    const c = client({ "x-api-key": extra.apiKey });
    // An open subscription keeps the (lazy) connection up while the key is revoked.
    const open = new Reader(c.iterate({ query: RUN_UPDATED }));
    await attached(
      open,
      (id) => h.svc.events.publish(runEvent(owner, runA1, pipeA, { id })),
      (r: Any) => r.data?.runUpdated.event.id,
    );
    await revokeKey(h.svc, { keyId: extra.id, workspaceId: owner.workspaceId });
    let refused: Any = null;
    try {
      for await (const r of c.iterate({ query: "{ runs { pagination { total } } }" })) refused = r;
    } catch (e) {
      refused = e;
    }
    expect(refused).toEqual([{ message: expect.stringContaining("revoked"), extensions: { code: "UNAUTHENTICATED", error: "unauthorized", statusCode: 401 } }]);
    await c.dispose();
  });
});

describe("SSE (Accept: text/event-stream)", () => {
  async function sse(key: string | null, variables: Record<string, unknown> = {}) {
    const ac = new AbortController();
    const headers: Record<string, string> = { accept: "text/event-stream", "content-type": "application/json" };
    if (key) headers["x-api-key"] = key;
    const res = await fetch(httpUrl(), { method: "POST", headers, body: JSON.stringify({ query: RUN_UPDATED, variables }), signal: ac.signal });
    return { res, ac };
  }

  test("the workspace's updates arrive as `next` events; another workspace's never", async () => {
    const { res, ac } = await sse(owner.apiKey);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = new Reader(sseMessages(res.body!));
    const payload = (m: { event: string; data: string }) => (m.event === "next" ? (JSON.parse(m.data) as Any) : null);
    await attached(
      reader,
      (id) => h.svc.events.publish(runEvent(owner, runA2, pipeB, { id })),
      (m) => payload(m)?.data?.runUpdated.event.id,
    );
    const foreign = runEvent(other, runOther, otherPipe);
    const mine = runEvent(owner, runA2, pipeB, { status: "completed", previousStatus: "processing" });
    await h.svc.events.publish(foreign);
    await h.svc.events.publish(mine);
    const [m] = await reader.take(1);
    expect(m!.event).toBe("next");
    const update = payload(m!).data.runUpdated;
    expect(update.event).toEqual({ ...mine, missed: null });
    expect(update.run).toEqual(await presentedRun(owner, runA2));
    expect(await reader.quiet(200)).toBe(true);
    ac.abort();
    await until(() => subscribers() === 0, "the SSE subscription to end after the client went away");
  });

  test("without a valid key: 401 before any stream", async () => {
    const none = await sse(null);
    expect(none.res.status).toBe(401);
    expect(((await none.res.json()) as Any).errors[0].extensions.code).toBe("UNAUTHENTICATED");
    const bad = await sse("fps_live_not-a-real-key");
    expect(bad.res.status).toBe(401);
  });

  test("another workspace's run: the stream carries NOT_FOUND and ends", async () => {
    const { res } = await sse(owner.apiKey, { runId: runOther });
    const messages: { event: string; data: string }[] = [];
    for await (const m of sseMessages(res.body!)) messages.push(m);
    const next = messages.find((m) => m.event === "next");
    expect(JSON.parse(next!.data).errors[0].extensions.code).toBe("NOT_FOUND");
    expect(messages.at(-1)!.event).toBe("complete");
  });
});
