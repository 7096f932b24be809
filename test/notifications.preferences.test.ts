import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * PUT/GET /notifications/preferences/{clientId}: the spec's rules (minItems
 * 1; eventType, channel, isEnabled required; recipients required and
 * non-empty when enabled, ignored when disabled; upsert on the pair), each
 * refusal a 400 naming the item and field that changes nothing, recipient
 * formats per channel, another workspace's connection a 404; and the same
 * on GraphQL and tRPC.
 */

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
let conn: string;

const path = (id = conn) => `/notifications/preferences/${id}`;
const put = (body: unknown, id = conn, who = ws) => h.api(who, "PUT", path(id), body);
const item = (over: Record<string, unknown> = {}) => ({
  eventType: "PIPELINE_RUN_FAILED",
  channel: "EMAIL",
  isEnabled: true,
  recipients: ["ops@acme.test"],
  ...over,
});

async function newConnection(who = ws): Promise<string> {
  return (await h.ok(who, "POST", "/connections", { name: `Partner ${crypto.randomUUID().slice(0, 8)}` })).id;
}

/** The refusal, its message, and proof that nothing changed. */
async function refused(body: unknown, message: string | RegExp) {
  const before = await h.ok(ws, "GET", path());
  const r = await put(body);
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error).toBe("invalid_input");
  if (typeof message === "string") expect(r.body.message).toContain(message);
  else expect(r.body.message).toMatch(message);
  expect(await h.ok(ws, "GET", path())).toEqual(before);
}

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
  conn = await newConnection();
});
afterAll(() => h.close());

describe("PUT and GET", () => {
  test("a new connection has none; PUT creates and answers all of the connection's preferences in the spec's shape", async () => {
    const id = await newConnection();
    expect(await h.ok(ws, "GET", path(id))).toEqual([]);
    const r = await put(
      {
        preferences: [
          item({ recipients: ["ops@acme.test", "oncall@acme.test"] }),
          item({ channel: "SLACK", recipients: ["#ops-alerts", "C0123ABCD"] }),
          item({ eventType: "PIPELINE_RUN_SUCCEEDED", channel: "SMS", recipients: ["+15551234567"], metadata: { team: "ops" } }),
        ],
      },
      id,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toHaveLength(3);
    for (const p of r.body) {
      expect(Object.keys(p).sort()).toEqual(
        ["id", "workspaceId", "clientId", "eventType", "channel", "isEnabled", "recipients", "metadata", "createdAt", "updatedAt"].sort(),
      );
      expect(p.id).toStartWith("npref_");
      expect(p.workspaceId).toBe(ws.workspaceId);
      expect(p.clientId).toBe(id);
      expect(p.createdAt).toBe("2026-11-22T10:00:00.000Z");
    }
    // By event type, then channel.
    expect(r.body.map((p: any) => [p.eventType, p.channel, p.isEnabled, p.recipients, p.metadata])).toEqual([
      ["PIPELINE_RUN_FAILED", "EMAIL", true, ["ops@acme.test", "oncall@acme.test"], null],
      ["PIPELINE_RUN_FAILED", "SLACK", true, ["#ops-alerts", "C0123ABCD"], null],
      ["PIPELINE_RUN_SUCCEEDED", "SMS", true, ["+15551234567"], { team: "ops" }],
    ]);
    expect(await h.ok(ws, "GET", path(id))).toEqual(r.body);
  });

  test("PUT upserts on (eventType, channel): the same pair updates its row, other pairs are left alone", async () => {
    const id = await newConnection();
    const first = await h.ok(ws, "PUT", path(id), {
      preferences: [item(), item({ eventType: "PIPELINE_RUN_SUCCEEDED", recipients: ["reports@acme.test"] })],
    });
    h.clock.advance(60_000);
    const second = await h.ok(ws, "PUT", path(id), { preferences: [item({ recipients: ["new@acme.test"] }), item({ channel: "SMS", recipients: ["+447700900123"] })] });
    expect(second).toHaveLength(3);
    const find = (list: any[], e: string, c: string) => list.find((p) => p.eventType === e && p.channel === c);
    const before = find(first, "PIPELINE_RUN_FAILED", "EMAIL");
    const after = find(second, "PIPELINE_RUN_FAILED", "EMAIL");
    expect(after.id).toBe(before.id);
    expect(after.recipients).toEqual(["new@acme.test"]);
    expect(after.createdAt).toBe(before.createdAt);
    expect(after.updatedAt).not.toBe(before.updatedAt);
    expect(find(second, "PIPELINE_RUN_SUCCEEDED", "EMAIL")).toEqual(find(first, "PIPELINE_RUN_SUCCEEDED", "EMAIL"));
    expect(find(second, "PIPELINE_RUN_FAILED", "SMS").recipients).toEqual(["+447700900123"]);
  });

  test("recipients are ignored when disabled: not checked, not required, and the stored list is kept", async () => {
    const id = await newConnection();
    await h.ok(ws, "PUT", path(id), { preferences: [item({ recipients: ["keep@acme.test"] })] });
    for (const recipients of [undefined, [], ["not an address"], 5, "x"]) {
      const r = await put({ preferences: [item({ isEnabled: false, recipients })] }, id);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body[0]).toMatchObject({ isEnabled: false, recipients: ["keep@acme.test"] });
    }
    // A new disabled pair starts with none.
    const created = await h.ok(ws, "PUT", path(id), { preferences: [{ eventType: "PIPELINE_RUN_SUCCEEDED", channel: "SLACK", isEnabled: false, recipients: ["??"] }] });
    expect(created.find((p: any) => p.channel === "SLACK")).toMatchObject({ isEnabled: false, recipients: [] });
    // Enabling again needs recipients.
    const r = await put({ preferences: [item({ recipients: undefined })] }, id);
    expect(r.status).toBe(400);
  });

  test("members read from a GET may be sent back; metadata left out keeps its value", async () => {
    const id = await newConnection();
    const made = await h.ok(ws, "PUT", path(id), { preferences: [item({ metadata: { ticket: "OPS-1" } })] });
    const echoed = await put({ preferences: made.map((p: any) => ({ ...p, recipients: ["b@acme.test"], metadata: undefined })) }, id);
    expect(echoed.status, JSON.stringify(echoed.body)).toBe(200);
    expect(echoed.body[0]).toMatchObject({ id: made[0].id, recipients: ["b@acme.test"], metadata: { ticket: "OPS-1" } });
    const cleared = await h.ok(ws, "PUT", path(id), { preferences: [item({ metadata: null })] });
    expect(cleared[0].metadata).toBeNull();
  });

  test("the same under version 2024-09-01 (an additive feature)", async () => {
    const id = await newConnection();
    const r = await h.request("PUT", path(id), { key: ws.apiKey, version: "2024-09-01", body: { preferences: [item()] } });
    expect(r.status).toBe(200);
    expect(r.headers.get("service-version")).toBe("2024-09-01");
    const g = await h.request("GET", path(id), { key: ws.apiKey, version: "2024-09-01" });
    expect(g.body).toEqual(r.body);
  });

  test("deleting the connection deletes its preferences", async () => {
    const id = await newConnection();
    await h.ok(ws, "PUT", path(id), { preferences: [item()] });
    await h.ok(ws, "DELETE", `/connections/${id}`);
    expect((await h.api(ws, "GET", path(id))).status).toBe(404);
    const p = h.svc.db.t.notificationPreferences;
    expect(await h.svc.db.read.$count(p)).toBeGreaterThan(0);
    const { eq } = await import("drizzle-orm");
    expect(await h.svc.db.read.$count(p, eq(p.connectionId, id))).toBe(0);
  });
});

describe("refusals: 400 naming the item and field, nothing changed", () => {
  beforeAll(async () => {
    await h.ok(ws, "PUT", path(), { preferences: [item({ recipients: ["base@acme.test"] })] });
  });

  test("preferences: required, an array, at least 1 item, at most one per pair", async () => {
    await refused({}, "preferences: is required");
    await refused({ preferences: item() }, "preferences: must be an array");
    await refused({ preferences: [] }, "preferences: must have at least 1 item");
    await refused([item()], /body|expected object/i);
    await refused({ preferences: [item()], extra: 1 }, "extra: unknown member");
  });

  test("eventType, channel and isEnabled are required per item, with their allowed values", async () => {
    const ok = item();
    await refused({ preferences: [ok, { channel: "EMAIL", isEnabled: true, recipients: ["a@acme.test"] }] }, "preferences[1].eventType: is required");
    await refused({ preferences: [item({ eventType: "RUN_FAILED" })] }, "preferences[0].eventType: must be one of PIPELINE_RUN_FAILED, PIPELINE_RUN_SUCCEEDED");
    await refused({ preferences: [{ eventType: "PIPELINE_RUN_FAILED", isEnabled: true, recipients: ["a@acme.test"] }] }, "preferences[0].channel: is required");
    await refused({ preferences: [ok, item({ channel: "PAGER" })] }, "preferences[1].channel: must be one of EMAIL, SLACK, SMS");
    await refused({ preferences: [{ eventType: "PIPELINE_RUN_FAILED", channel: "EMAIL", recipients: ["a@acme.test"] }] }, "preferences[0].isEnabled: is required");
    await refused({ preferences: [item({ isEnabled: "true" })] }, "preferences[0].isEnabled: must be true or false");
    await refused({ preferences: [item({ colour: "red" })] }, "preferences[0].colour: unknown member");
    await refused({ preferences: "x".repeat(3) }, "preferences: must be an array");
  });

  test("an enabled preference needs recipients: present, an array of strings, not empty", async () => {
    await refused({ preferences: [item(), item({ channel: "SLACK", recipients: undefined })] }, "preferences[1].recipients: is required when isEnabled is true");
    await refused({ preferences: [item({ recipients: [] })] }, "preferences[0].recipients: must not be empty when isEnabled is true");
    await refused({ preferences: [item({ recipients: "ops@acme.test" })] }, "preferences[0].recipients: must be an array of strings");
    await refused({ preferences: [item({ recipients: ["ok@acme.test", 7] })] }, "preferences[0].recipients[1]:");
    await refused({ preferences: [item({ recipients: ["ok@acme.test", "  "] })] }, "preferences[0].recipients[1]: must not be empty");
    const many = Array.from({ length: 51 }, (_, i) => `p${i}@acme.test`);
    await refused({ preferences: [item({ recipients: many })] }, "preferences[0].recipients: must have at most 50 recipients");
  });

  test("recipients are checked for their channel", async () => {
    await refused({ preferences: [item({ recipients: ["ok@acme.test", "ops at acme"] })] }, "preferences[0].recipients[1]: 'ops at acme' is not an e-mail address");
    for (const bad of ["general", "#General", "C01", "ops-alerts", "https://hooks.slack.com/x"]) {
      await refused({ preferences: [item({ channel: "SLACK", recipients: [bad] })] }, `preferences[0].recipients[0]: '${bad}' is not a Slack channel`);
    }
    for (const bad of ["555-1234", "15551234567", "+0123456789", "+1 555 123 4567", "+1234567890123456"]) {
      await refused({ preferences: [item({ channel: "SMS", recipients: [bad] })] }, `preferences[0].recipients[0]: '${bad}' is not a phone number in E.164 form`);
    }
    // And what is accepted.
    const r = await h.ok(ws, "PUT", path(await newConnection()), {
      preferences: [
        item({ recipients: ["first.last+tag@sub.acme.test"] }),
        item({ channel: "SLACK", recipients: ["C0123ABCD", "G01ABCDEF", "#ops_alerts-eu.1"] }),
        item({ channel: "SMS", recipients: ["+15551234567", "+447700900123"] }),
      ],
    });
    expect(r).toHaveLength(3);
  });

  test("duplicates in one request: a recipient twice, a pair twice", async () => {
    await refused({ preferences: [item({ recipients: ["ops@acme.test", "OPS@acme.test"] })] }, "preferences[0].recipients[1]: duplicates recipients[0]");
    await refused(
      { preferences: [item(), item({ channel: "SMS", recipients: ["+15551234567"] }), item({ recipients: ["other@acme.test"] })] },
      "preferences[2]: duplicates preferences[0] (PIPELINE_RUN_FAILED over EMAIL)",
    );
    await refused({ preferences: [item({ isEnabled: false }), item({ isEnabled: false })] }, "preferences[1]: duplicates preferences[0]");
  });

  test("one bad item refuses the whole request: the good items before it are not saved", async () => {
    await refused({ preferences: [item({ recipients: ["changed@acme.test"] }), item({ channel: "SMS", recipients: ["nope"] })] }, "preferences[1].recipients[0]");
  });
});

describe("the connection must be the caller's", () => {
  test("another workspace's connection, or an unknown id, is a 404 on GET and PUT, whatever the body", async () => {
    for (const id of [conn, "conn_01jz0000000000000000000000"]) {
      for (const body of [{ preferences: [item()] }, { preferences: [] }, { name: "hijacked" }]) {
        const r = await put(body, id, other);
        expect(r.status).toBe(404);
        expect(r.body).toMatchObject({ statusCode: 404, error: "not_found" });
      }
      const g = await h.api(other, "GET", path(id));
      expect(g.status).toBe(404);
    }
    expect((await h.ok(ws, "GET", path()))[0].recipients).toEqual(["base@acme.test"]);
  });
});

describe("GraphQL and tRPC", () => {
  const UPSERT = `mutation($id: ID!, $input: PutNotificationPreferencesInput!) {
    upsertNotificationPreferences(id: $id, input: $input) { id clientId eventType channel isEnabled recipients metadata }
  }`;
  const READ = `query($id: ID!) { notificationPreferences(id: $id) { id eventType channel isEnabled recipients } }`;

  test("GraphQL upserts and reads with REST's rules and messages", async () => {
    const id = await newConnection();
    const r = await h.graphql(ws.apiKey, UPSERT, {
      id,
      input: { preferences: [{ eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["#ops"] }] },
    });
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data.upsertNotificationPreferences).toEqual([
      { id: expect.stringMatching(/^npref_/), clientId: id, eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["#ops"], metadata: null },
    ]);
    const read = await h.graphql(ws.apiKey, READ, { id });
    expect(read.body.data.notificationPreferences).toHaveLength(1);
    expect(await h.ok(ws, "GET", path(id))).toMatchObject([{ channel: "SLACK", recipients: ["#ops"] }]);

    const bad = await h.graphql(ws.apiKey, UPSERT, {
      id,
      input: { preferences: [{ eventType: "PIPELINE_RUN_FAILED", channel: "SMS", isEnabled: true, recipients: [] }] },
    });
    expect(bad.body.errors?.[0]?.message).toBe("preferences[0].recipients: must not be empty when isEnabled is true (an enabled preference needs a recipient)");
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: "BAD_USER_INPUT", statusCode: 400 });
    const empty = await h.graphql(ws.apiKey, UPSERT, { id, input: { preferences: [] } });
    expect(empty.body.errors?.[0]?.message).toBe("preferences: must have at least 1 item");

    const foreign = await h.graphql(other.apiKey, READ, { id });
    expect(foreign.body.data?.notificationPreferences).toBeNull();
    expect(foreign.body.errors?.[0]?.extensions).toMatchObject({ code: "NOT_FOUND" });
  });

  test("tRPC: notificationPreferences.put/get with the same rules", async () => {
    const id = await newConnection();
    const caller = h.trpc(ws);
    const saved = await caller.notificationPreferences.put({ id, data: { preferences: [item({ channel: "SMS", recipients: ["+15551234567"] })] } as never });
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({ clientId: id, channel: "SMS", recipients: ["+15551234567"] });
    expect(await caller.notificationPreferences.get({ id })).toEqual(saved);
    const e = await caller.notificationPreferences.put({ id, data: { preferences: [item({ isEnabled: undefined })] } as never }).catch((x) => x);
    expect(e).toBeInstanceOf(TRPCError);
    expect((e as TRPCError).code).toBe("BAD_REQUEST");
    expect((e as TRPCError).message).toBe("preferences[0].isEnabled: is required");
    const nf = await h.trpc(other).notificationPreferences.get({ id }).catch((x) => x);
    expect((nf as TRPCError).code).toBe("NOT_FOUND");
  });
});
