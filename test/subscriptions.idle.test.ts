import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import type { GraphqlSocketData } from "../graphql/ws";
import { SSE_PING_MS } from "../trpc/init";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { Reader, type SseMessage, sseMessages } from "./helpers/events";
import { attached, closeLive, type LiveWorld, liveWorld, runEvent } from "./helpers/live";

/**
 * A subscription over SSE that sees no update for longer than Bun.serve's
 * idle timeout (10 s) stays open, GraphQL's and tRPC's alike, and the next
 * update still arrives. Until stop 16 both were cut at 10 s (ECONNRESET on
 * the client). Waits ~13 s of real time: the timeout is Bun's, not ours to shorten.
 */

// biome-ignore lint/suspicious/noExplicitAny: payloads are checked member by member
type Any = any;

let h: Harness;
let server: Server<GraphqlSocketData>;
let owner: TestWorkspace;
let pipe = "";
let run = "";

let world: LiveWorld;

beforeAll(async () => {
  world = await liveWorld();
  ({ h, server, owner, pipeA: pipe, runA1: run } = world);
});

afterAll(() => closeLive(world));

/** Every SSE message until the stream ends or `ms` pass; `ended` says which. */
async function drain(reader: Reader<SseMessage>, ms: number): Promise<{ messages: SseMessage[]; ended: boolean }> {
  const messages: SseMessage[] = [];
  const until = Date.now() + ms;
  for (;;) {
    const left = until - Date.now();
    if (left <= 0) return { messages, ended: false };
    try {
      messages.push(...(await reader.take(1, left)));
    } catch (e) {
      return { messages, ended: String(e).includes("ended") || String(e).includes("ECONNRESET") };
    }
  }
}

test(
  "quiet for longer than the server's idle timeout: both SSE subscriptions stay open and the next update arrives",
  async () => {
    const headers = { accept: "text/event-stream", "x-api-key": owner.apiKey };
    const trpcRes = await fetch(`http://127.0.0.1:${server.port}/trpc/runs.onUpdate?input=${encodeURIComponent(JSON.stringify({ pipelineId: pipe }))}`, { headers });
    const gqlRes = await fetch(`http://127.0.0.1:${server.port}/graphql`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ query: `subscription($p: ID) { runUpdated(pipelineId: $p) { event { id } run { id status } } }`, variables: { p: pipe } }),
    });
    expect([trpcRes.status, gqlRes.status]).toEqual([200, 200]);
    const trpc = new Reader(sseMessages(trpcRes.body!));
    const gql = new Reader(sseMessages(gqlRes.body!));
    const trpcData = (m: SseMessage): Any => (m.event === "message" ? JSON.parse(m.data) : null);
    const gqlData = (m: SseMessage): Any => (m.event === "next" ? JSON.parse(m.data).data.runUpdated : null);
    await attached(trpc, (id) => h.svc.events.publish(runEvent(owner, run, pipe, { id })), (m) => trpcData(m)?.event.id);
    await attached(gql, (id) => h.svc.events.publish(runEvent(owner, run, pipe, { id })), (m) => gqlData(m)?.event.id);

    // Quiet past 10 s (and past one tRPC keep-alive): read what comes meanwhile, both at once.
    const quiet = SSE_PING_MS + 1000;
    const [trpcQuiet, gqlQuiet] = await Promise.all([drain(trpc, quiet), drain(gql, quiet)]);
    expect(trpcQuiet.ended).toBe(false);
    expect(gqlQuiet.ended).toBe(false);
    // tRPC's keep-alive is an event of its own (Yoga's is a comment, which the reader skips).
    expect(trpcQuiet.messages.map((m) => m.event)).toContain("ping");

    const last = runEvent(owner, run, pipe, { status: "completed", previousStatus: "processing" });
    await h.svc.events.publish(last);
    const seen = async (reader: Reader<SseMessage>, data: (m: SseMessage) => Any) => {
      for (;;) {
        const got = data((await reader.take(1))[0]!);
        if (got?.event.id === last.id) return got;
      }
    };
    const [t, g] = await Promise.all([seen(trpc, trpcData), seen(gql, gqlData)]);
    expect(t.run).toMatchObject({ id: run, status: "pending" });
    expect(g.run).toEqual({ id: run, status: "pending" });
  },
  40_000,
);
