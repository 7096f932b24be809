import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { emailConnection, ITEMS_BY_FORMAT, sendMail, startSmtp } from "./helpers/email";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline } from "./helpers/runs";

/** The arrivals of a connection on REST, GraphQL and tRPC: what mail brought and what became of it. */
let h: Harness;
let ws: TestWorkspace;
let intruder: TestWorkspace;
let inbox: Awaited<ReturnType<typeof emailConnection>>;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  intruder = await h.workspace({ name: "Intruder" });
  const port = await startSmtp(h);
  inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"], emailSubjectFilter: "items" });
  await createPipeline(h, ws, { connectionId: inbox.id });
  // Oldest first: started, rejected (format), rejected (subject), ignored (no attachment).
  await sendMail(port, { to: inbox.address, subject: "items 1", attachments: [{ filename: "a.csv", content: ITEMS_BY_FORMAT.csv! }] });
  await sendMail(port, { to: inbox.address, subject: "items 2", attachments: [{ filename: "b.json", content: "[]" }] });
  await sendMail(port, { to: inbox.address, subject: "invoice", attachments: [{ filename: "c.csv", content: "x" }] });
  await sendMail(port, { to: inbox.address, subject: "items 3" });
}, 30_000);
afterAll(() => h.close());

describe("REST", () => {
  test("newest first, paged as {data, pagination}, filtered by outcome", async () => {
    const all = await h.ok(ws, "GET", `/connections/${inbox.id}/arrivals`);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 4, totalPages: 1 });
    expect(all.data.map((a: any) => [a.outcome, a.filename ?? null])).toEqual([
      ["ignored", null],
      ["rejected", null],
      ["rejected", "b.json"],
      ["started", "a.csv"],
    ]);
    const second = await h.ok(ws, "GET", `/connections/${inbox.id}/arrivals?page=2&limit=3`);
    expect(second.pagination).toEqual({ page: 2, limit: 3, total: 4, totalPages: 2 });
    expect(second.data.map((a: any) => a.filename)).toEqual(["a.csv"]);
    const rejected = await h.ok(ws, "GET", `/connections/${inbox.id}/arrivals?outcome=rejected`);
    expect(rejected.data.map((a: any) => a.reason)).toEqual([
      "subject 'invoice' does not contain 'items' (emailSubjectFilter)",
      "attachment format 'json' is not allowed (emailAllowedFormats: csv)",
    ]);
    expect(rejected.pagination.total).toBe(2);
  });

  test("a bad filter is a 400 naming it; another workspace's or an unknown connection is a 404", async () => {
    const bad = await h.api(ws, "GET", `/connections/${inbox.id}/arrivals?outcome=lost&limit=500`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("outcome: must be one of started, rejected, ignored");
    expect(bad.body.message).toContain("limit: must be at most 100");
    for (const [who, id] of [
      [intruder, inbox.id],
      [ws, "conn_00000000000000000000000000"],
    ] as const) {
      const res = await h.api(who, "GET", `/connections/${id}/arrivals`);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: "not_found", message: `connection '${id}' not found` });
    }
  });
});

describe("GraphQL", () => {
  const query = `query($id: ID!, $outcome: ArrivalOutcome, $limit: Int) {
    arrivals(connectionId: $id, outcome: $outcome, limit: $limit) {
      data { id connectionId transport filename path size outcome reason runIds metadata createdAt }
      pagination { page limit total totalPages }
    }
  }`;

  test("the same page, with the outcome as an enum", async () => {
    const res = await h.graphql(ws.apiKey, query, { id: inbox.id, outcome: "started" });
    expect(res.body.errors).toBeUndefined();
    const page = res.body.data.arrivals;
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 1, totalPages: 1 });
    const [a] = page.data;
    expect(a).toMatchObject({ connectionId: inbox.id, transport: "email", filename: "a.csv", outcome: "started", reason: null });
    expect(a.runIds).toHaveLength(1);
    expect(a.metadata).toMatchObject({ subject: "items 1", recipient: inbox.address });
    const rest = await h.ok(ws, "GET", `/connections/${inbox.id}/arrivals?outcome=started`);
    expect(a.id).toBe(rest.data[0].id);
  });

  test("another workspace's connection: null with NOT_FOUND; a bad enum is refused by GraphQL", async () => {
    const res = await h.graphql(intruder.apiKey, query, { id: inbox.id });
    expect(res.body.data?.arrivals).toBeNull();
    expect(res.body.errors?.[0]?.extensions.code).toBe("NOT_FOUND");
    const bad = await h.graphql(ws.apiKey, query, { id: inbox.id, outcome: "lost" });
    expect(bad.body.errors?.[0]?.message).toContain("ArrivalOutcome");
    const tooMany = await h.graphql(ws.apiKey, query, { id: inbox.id, limit: 500 });
    expect(tooMany.body.errors?.[0]?.message).toContain("limit: must be at most 100");
  });
});

describe("tRPC", () => {
  test("arrivals.list answers the same page; refusals carry the service's codes", async () => {
    const page = await h.trpc(ws).arrivals.list({ connectionId: inbox.id, outcome: "ignored" });
    expect(page.pagination.total).toBe(1);
    expect(page.data[0]).toMatchObject({ outcome: "ignored", reason: "the message has no attachment" });
    const notFound = await h.trpc(intruder).arrivals.list({ connectionId: inbox.id }).catch((e) => e);
    expect(notFound).toBeInstanceOf(TRPCError);
    expect(notFound.code).toBe("NOT_FOUND");
    const bad = await h.trpc(ws).arrivals.list({ connectionId: inbox.id, outcome: "lost" as never }).catch((e) => e);
    expect(bad.code).toBe("BAD_REQUEST");
    expect(bad.message).toContain("outcome: must be one of");
    const missing = await h.trpc(ws).arrivals.list({} as never).catch((e) => e);
    expect(missing.code).toBe("BAD_REQUEST");
    expect(missing.message).toContain("connectionId");
  });
});
