import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from "@trpc/client";
import { type Client, createClient } from "graphql-ws";
import type { GraphqlSocketData } from "../graphql/ws";
import type { AppRouter } from "../trpc/router";
import { newId } from "../src/domain/ids";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { FetchEventSource } from "./helpers/event-source";
import { closeLive, type LiveWorld, liveWorld, subscribers as liveSubscribers, runEvent, until } from "./helpers/live";

/**
 * Live run updates through the official client packages, configured as their
 * documentation shows for browsers (which cannot set headers on an event
 * stream or a WebSocket): @trpc/client's `httpSubscriptionLink` with
 * `connectionParams`, and graphql-ws's `connectionParams` in connection_init.
 * The key goes as `x-api-key`, the header's own name, or as `apiKey`.
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

const subscribers = () => liveSubscribers(h);
afterEach(async () => {
  await until(() => subscribers() === 0, "every subscription to end");
});

/** Publishes marker events until `seen` reports one of them, then one real update, which must arrive as well. */
async function expectUpdates(seen: () => string[]) {
  for (let i = 0; i < 100; i++) {
    const id = newId("event");
    await h.svc.events.publish(runEvent(owner, run, pipe, { id }));
    await Bun.sleep(100);
    if (seen().includes(id)) break;
  }
  const real = runEvent(owner, run, pipe, { status: "completed", previousStatus: "processing" });
  await h.svc.events.publish(real);
  await until(() => seen().includes(real.id), "the update after the markers");
}

describe("tRPC: httpSubscriptionLink with connectionParams", () => {
  const url = () => `http://127.0.0.1:${server.port}/trpc`;
  function trpc(connectionParams: Record<string, string>) {
    return createTRPCClient<AppRouter>({
      links: [
        splitLink({
          condition: (op) => op.type === "subscription",
          // Bun has no EventSource; a browser's own would be used as it is.
          true: httpSubscriptionLink({ url: url(), connectionParams, EventSource: FetchEventSource as never }),
          false: httpBatchLink({ url: url(), headers: { "x-api-key": owner.apiKey } }),
        }),
      ],
    });
  }

  for (const name of ["x-api-key", "apiKey"]) {
    test(`the key as { "${name}": KEY } opens the stream and updates arrive`, async () => {
      const got: Any[] = [];
      const errors: unknown[] = [];
      const before = FetchEventSource.opened.length;
      const sub = trpc({ [name]: owner.apiKey }).runs.onUpdate.subscribe(
        { runId: run },
        { onData: (d) => got.push(d), onError: (e) => errors.push(e) },
      );
      try {
        await expectUpdates(() => got.map((d) => d.event.id));
        expect(errors).toEqual([]);
        expect(got.at(-1).run.id).toBe(run);
        // The key went in the URL's connectionParams: an EventSource sends no headers.
        const opened = new URL(FetchEventSource.opened[before]!);
        expect(JSON.parse(opened.searchParams.get("connectionParams")!)).toEqual({ [name]: owner.apiKey });
      } finally {
        sub.unsubscribe();
      }
    });
  }

  test("a wrong key in connectionParams: 401, no stream, the client reports the error", async () => {
    const res = await fetch(`${url()}/runs.onUpdate?connectionParams=${encodeURIComponent(JSON.stringify({ "x-api-key": "fps_live_not-a-real-key" }))}`, {
      headers: { accept: "text/event-stream" },
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as Any).error.data).toMatchObject({ code: "UNAUTHORIZED", statusCode: 401 });
    const errors: unknown[] = [];
    const sub = trpc({ "x-api-key": "fps_live_not-a-real-key" }).runs.onUpdate.subscribe(undefined, { onData: () => {}, onError: (e) => errors.push(e) });
    try {
      await until(() => errors.length > 0, "the client to report the refusal");
      expect(subscribers()).toBe(0);
    } finally {
      sub.unsubscribe();
    }
  });

  test("queries and mutations keep using the header through the same client", async () => {
    const c = trpc({ "x-api-key": owner.apiKey });
    const got = (await c.runs.get.query({ id: run })) as Any;
    expect(got.id).toBe(run);
  });
});

describe("GraphQL: graphql-ws with connectionParams", () => {
  const clients: Client[] = [];
  afterAll(async () => {
    for (const c of clients) await c.dispose();
  });
  function gql(connectionParams: Record<string, string>) {
    const c = createClient({ url: `ws://127.0.0.1:${server.port}/graphql`, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
    clients.push(c);
    return c;
  }
  const QUERY = "subscription($runId: ID) { runUpdated(runId: $runId) { event { id status } run { id } } }";

  for (const name of ["x-api-key", "apiKey"]) {
    test(`the key as { "${name}": KEY } in connection_init: updates arrive`, async () => {
      const got: Any[] = [];
      const it = gql({ [name]: owner.apiKey }).iterate({ query: QUERY, variables: { runId: run } });
      const reading = (async () => {
        for await (const r of it) got.push(r);
      })();
      try {
        await expectUpdates(() => got.map((r) => r.data?.runUpdated.event.id));
        expect(got.at(-1)).toMatchObject({ data: { runUpdated: { event: { status: "completed" }, run: { id: run } } } });
      } finally {
        await it.return?.();
        await reading;
      }
    });
  }

  test("a wrong key in connection_init closes the socket with 4403", async () => {
    const it = gql({ apiKey: "fps_live_not-a-real-key" }).iterate({ query: QUERY });
    const error = await it.next().then(
      () => null,
      (e) => e,
    );
    expect(error?.code).toBe(4403);
    expect(subscribers()).toBe(0);
  });
});
