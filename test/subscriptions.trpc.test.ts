import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { TRPCError } from "@trpc/server";
import type { GraphqlSocketData } from "../graphql/ws";
import { createCaller } from "../trpc/router";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { Reader, type SseMessage, sseMessages } from "./helpers/events";
import { attached, closeLive, type LiveWorld, liveWorld, subscribers as liveSubscribers, runEvent, runOf, until } from "./helpers/live";

/**
 * The tRPC subscription `runs.onUpdate`: in process (createCaller) and over
 * HTTP as server-sent events from a real server. Only the caller's
 * workspace's runs arrive, each with the run as REST presents it.
 */

// biome-ignore lint/suspicious/noExplicitAny: payloads are checked member by member
type Any = any;

let h: Harness;
let server: Server<GraphqlSocketData>;
let owner: TestWorkspace;
let other: TestWorkspace;
let pipeA = "";
let runA1 = "";
let runA2 = "";
let otherPipe = "";
let runOther = "";

let world: LiveWorld;

beforeAll(async () => {
  world = await liveWorld();
  ({ h, server, owner, other, pipeA, runA1, otherPipe, runOther } = world);
  runA2 = await runOf(h, owner, pipeA, "a2.csv");
});

afterAll(() => closeLive(world));

const subscribers = () => liveSubscribers(h);
const wire = (v: unknown): Any => JSON.parse(JSON.stringify(v));

describe("in process (createCaller)", () => {
  test("the workspace's updates with the presented run; another workspace's never", async () => {
    const ac = new AbortController();
    // The caller takes the signal a subscription ends with (an HTTP client's request signal, over HTTP).
    const it = await createCaller({ svc: h.svc, actor: owner.actor }, { signal: ac.signal }).runs.onUpdate(undefined);
    const reader = new Reader((it as AsyncIterable<Any>)[Symbol.asyncIterator]());
    await attached(reader, (id) => h.svc.events.publish(runEvent(owner, runA1, pipeA, { id })), (u) => u.event.id);
    const foreign = runEvent(other, runOther, otherPipe);
    const mine = runEvent(owner, runA2, pipeA, { status: "failed", previousStatus: "processing" });
    await h.svc.events.publish(foreign);
    await h.svc.events.publish(mine);
    const [u] = await reader.take(1);
    expect(u.event).toEqual(mine);
    expect(wire(u.run)).toEqual((await h.api(owner, "GET", `/pipeline-runs/${runA2}`)).body);
    expect(await reader.quiet(200)).toBe(true);
    ac.abort();
    await until(() => subscribers() === 0, "the subscription to end on abort");
  });

  test("a foreign run is NOT_FOUND before anything streams; a bad filter is BAD_REQUEST", async () => {
    const t = h.trpc(owner);
    const foreign = await t.runs.onUpdate({ runId: runOther }).catch((e) => e);
    expect(foreign).toBeInstanceOf(TRPCError);
    expect(foreign.code).toBe("NOT_FOUND");
    expect(foreign.message).toBe((await h.api(owner, "GET", `/pipeline-runs/${runOther}`)).body.message);
    const bad = await t.runs.onUpdate({ runId: "", colour: "red" } as never).catch((e) => e);
    expect(bad.code).toBe("BAD_REQUEST");
    expect(bad.message).toContain("runId: must not be empty");
    expect(bad.message).toContain("colour: unknown member");
    expect(subscribers()).toBe(0);
  });

  test("return() on the iterator ends the subscription too", async () => {
    const it = (await h.trpc(owner).runs.onUpdate({ pipelineId: pipeA })) as AsyncIterable<Any>;
    const iterator = it[Symbol.asyncIterator]();
    const pending = iterator.next();
    expect(subscribers()).toBe(1);
    await iterator.return?.();
    expect(await pending).toMatchObject({ done: true });
    expect(subscribers()).toBe(0);
  });
});

describe("over HTTP (SSE)", () => {
  async function open(key: string | null, input?: unknown) {
    const ac = new AbortController();
    const qs = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(input))}`;
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (key) headers["x-api-key"] = key;
    const res = await fetch(`http://127.0.0.1:${server.port}/trpc/runs.onUpdate${qs}`, { headers, signal: ac.signal });
    return { res, ac };
  }
  /** A data message's payload (tRPC sends its own `connected` and `ping` events besides). */
  const data = (m: SseMessage): Any => (m.event === "message" ? JSON.parse(m.data) : null);

  test("runId narrows to one run; the stream ends for the server when the client goes away", async () => {
    const { res, ac } = await open(owner.apiKey, { runId: runA2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = new Reader(sseMessages(res.body!));
    await attached(reader, (id) => h.svc.events.publish(runEvent(owner, runA2, pipeA, { id })), (m) => data(m)?.event.id);
    const otherRun = runEvent(owner, runA1, pipeA);
    const mine = runEvent(owner, runA2, pipeA, { status: "completed", previousStatus: "processing" });
    const foreign = runEvent(other, runA2, pipeA);
    await h.svc.events.publish(otherRun);
    await h.svc.events.publish(foreign);
    await h.svc.events.publish(mine);
    let got: Any = null;
    while (!got) got = data((await reader.take(1))[0]!);
    expect(got.event).toEqual(mine);
    expect(got.run).toEqual((await h.api(owner, "GET", `/pipeline-runs/${runA2}`)).body);
    ac.abort();
    await until(() => subscribers() === 0, "the subscription to end after the client went away");
  });

  test("without a valid key: 401 and no stream", async () => {
    for (const key of [null, "fps_live_not-a-real-key"]) {
      const { res } = await open(key);
      expect(res.status).toBe(401);
      const body = (await res.json()) as Any;
      expect(body.error.data).toMatchObject({ code: "UNAUTHORIZED", error: "unauthorized", statusCode: 401 });
    }
    expect(subscribers()).toBe(0);
  });

  test("another workspace's pipeline: the stream reports NOT_FOUND", async () => {
    const { res, ac } = await open(owner.apiKey, { pipelineId: otherPipe });
    const reader = new Reader(sseMessages(res.body!));
    let error: SseMessage | undefined;
    for (let i = 0; i < 5 && !error; i++) {
      const [m] = await reader.take(1);
      if (m!.event === "serialized-error") error = m;
    }
    expect(JSON.parse(error!.data).data).toMatchObject({ code: "NOT_FOUND", error: "not_found", statusCode: 404 });
    ac.abort();
    expect(subscribers()).toBe(0);
  });
});
