import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { RUN_EVENT_TYPES } from "../src/services/run-path/announce/run-events";
import { expectError } from "./helpers/expect";
import { Harness, type Reply, type TestWorkspace } from "./helpers/harness";

// Harness start (a Postgres database, migrations, the job queue) can take seconds on a busy machine.
setDefaultTimeout(30_000);

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;

/** Neither a `secret` member nor the secret's value anywhere in a reply. */
function expectNoSecret(body: unknown, secret: string) {
  const text = JSON.stringify(body);
  expect(text).not.toContain('"secret"');
  expect(text).not.toContain(secret.slice("whsec_".length));
}

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
});

afterAll(async () => {
  await h.close();
});

describe("create", () => {
  test("returns the webhook with a whsec_ signing secret (32 random bytes), active by default", async () => {
    const res = await h.api(ws, "POST", "/webhooks", { name: "Run events", url: "https://hooks.example.com/runs" });
    expect(res.status).toBe(200);
    const w = res.body;
    expect(w.id).toMatch(/^wh_/);
    expect(w).toMatchObject({ name: "Run events", url: "https://hooks.example.com/runs", workspaceId: ws.workspaceId, isActive: true });
    expect(w.createdAt).toBe(h.clock.now().toISOString());
    expect(w.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(w.secret.slice("whsec_".length), "base64")).toHaveLength(32);
    // Every event type unless told, no description, a pipeline webhook.
    expect(w).toMatchObject({ eventTypes: [...RUN_EVENT_TYPES], description: null, kind: "WEBHOOK" });
  });

  test("takes the event types it receives and a description; types are kept in one documented order, once each", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", {
      name: "Failures",
      url: "https://hooks.example.com/failures",
      eventTypes: ["pipeline_run.failed", "pipeline_run.completed", "pipeline_run.failed"],
      description: "  Pages the on-call engineer  ",
    });
    expect(w).toMatchObject({ eventTypes: ["pipeline_run.completed", "pipeline_run.failed"], description: "Pages the on-call engineer" });
    expect(await h.ok(ws, "GET", `/webhooks/${w.id}`)).toMatchObject({ eventTypes: ["pipeline_run.completed", "pipeline_run.failed"] });
  });

  test("every webhook gets its own secret", async () => {
    const a = await h.ok(ws, "POST", "/webhooks", { name: "A", url: "https://hooks.example.com/a" });
    const b = await h.ok(ws, "POST", "/webhooks", { name: "A", url: "https://hooks.example.com/a" });
    expect(a.id).not.toBe(b.id);
    expect(a.secret).not.toBe(b.secret);
  });

  test("can be created inactive, and http URLs with ports and query strings are accepted", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", { name: "Paused", url: "http://hooks.example.com:8080/in?team=ops", isActive: false });
    expect(w.isActive).toBe(false);
    expect(w.url).toBe("http://hooks.example.com:8080/in?team=ops");
  });
});

describe("reads never return the secret", () => {
  test("GET, list and PATCH replies carry the webhook but not its secret", async () => {
    const created = await h.ok(ws, "POST", "/webhooks", { name: "Quiet", url: "https://hooks.example.com/quiet" });
    const { secret, ...rest } = created;

    const got = await h.ok(ws, "GET", `/webhooks/${created.id}`);
    expect(got).toEqual(rest);
    expectNoSecret(got, secret);

    const list = await h.ok(ws, "GET", "/webhooks?limit=100");
    expect(list.data.find((x: { id: string }) => x.id === created.id)).toEqual(rest);
    expectNoSecret(list, secret);

    const patched = await h.ok(ws, "PATCH", `/webhooks/${created.id}`, { name: "Quiet (renamed)" });
    expect(patched.name).toBe("Quiet (renamed)");
    expectNoSecret(patched, secret);
  });

  test("a linked pipeline shows only id, name and url of the webhook", async () => {
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Linked", url: "https://hooks.example.com/linked" });
    const conn = await h.ok(ws, "POST", "/connections", { name: "Feed", type: "SFTP", useHostedSFTP: true });
    const schema = await h.ok(ws, "POST", "/schemas", { name: "Rows", definition: { type: "object", properties: {} } });
    const p = await h.ok(ws, "POST", "/pipelines", { name: "P", clientId: conn.id, schemaId: schema.id, webhookIds: [hook.id] });
    expect(p.webhooks).toEqual([{ id: hook.id, name: "Linked", url: "https://hooks.example.com/linked" }]);
    expectNoSecret(p, hook.secret);
  });
});

describe("list, update, delete", () => {
  test("lists as {data, pagination}, newest first, paged, only the caller's webhooks", async () => {
    const lw = await h.workspace({ name: "Lister" });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      h.clock.advance(1000);
      ids.push((await h.ok(lw, "POST", "/webhooks", { name: `Hook ${n}`, url: `https://hooks.example.com/${n}` })).id);
    }
    const all = await h.ok(lw, "GET", "/webhooks");
    expect(all.data.map((w: { id: string }) => w.id)).toEqual([...ids].reverse());
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1 });

    const p1 = await h.ok(lw, "GET", "/webhooks?limit=2");
    const p2 = await h.ok(lw, "GET", "/webhooks?limit=2&page=2");
    expect(p1.pagination).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect(p2.pagination).toEqual({ page: 2, limit: 2, total: 3, totalPages: 2 });
    expect([...p1.data, ...p2.data].map((w: { id: string }) => w.id)).toEqual([...ids].reverse());

    const theirs = await h.ok(other, "GET", "/webhooks");
    expect(theirs.data.map((w: { id: string }) => w.id)).not.toContain(ids[0]);
  });

  test("PATCH changes only the members sent; updatedAt moves", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", { name: "Editable", url: "https://hooks.example.com/edit" });
    h.clock.advance(30_000);
    const url = await h.ok(ws, "PATCH", `/webhooks/${w.id}`, { url: "https://hooks.example.com/edited" });
    expect(url).toMatchObject({ name: "Editable", url: "https://hooks.example.com/edited", isActive: true, createdAt: w.createdAt });
    expect(url.updatedAt).toBe(h.clock.now().toISOString());
    expect(url.updatedAt).not.toBe(w.updatedAt);

    const off = await h.ok(ws, "PATCH", `/webhooks/${w.id}`, { isActive: false });
    expect(off).toMatchObject({ name: "Editable", url: "https://hooks.example.com/edited", isActive: false });

    const got = await h.ok(ws, "GET", `/webhooks/${w.id}`);
    expect(got).toEqual(off);

    const typed = await h.ok(ws, "PATCH", `/webhooks/${w.id}`, { eventTypes: ["pipeline_run.acknowledged"], description: "Acks only" });
    expect(typed).toMatchObject({ eventTypes: ["pipeline_run.acknowledged"], description: "Acks only", name: "Editable" });
    expect(await h.ok(ws, "PATCH", `/webhooks/${w.id}`, { description: null })).toMatchObject({ description: null, eventTypes: ["pipeline_run.acknowledged"] });
    // Members a client read back (kind, ids, times) may be sent unchanged.
    expect((await h.api(ws, "PATCH", `/webhooks/${w.id}`, { ...got, name: "Round trip" })).status).toBe(200);
  });

  test("rotating the secret answers a new one, once; reads still never show it", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", { name: "Rotated", url: "https://hooks.example.com/rotated" });
    h.clock.advance(1000);
    const r1 = await h.ok(ws, "POST", `/webhooks/${w.id}/rotate-secret`);
    const r2 = await h.ok(ws, "POST", `/webhooks/${w.id}/rotate-secret`);
    for (const r of [r1, r2]) {
      expect(r.secret).toMatch(/^whsec_/);
      expect(Buffer.from(r.secret.slice("whsec_".length), "base64")).toHaveLength(32);
      expect(r).toMatchObject({ id: w.id, name: "Rotated", updatedAt: h.clock.now().toISOString() });
    }
    expect(new Set([w.secret, r1.secret, r2.secret]).size).toBe(3);
    const got = await h.ok(ws, "GET", `/webhooks/${w.id}`);
    expectNoSecret(got, r2.secret);
    expectError(await h.api(other, "POST", `/webhooks/${w.id}/rotate-secret`), 404, "not_found");
    expectError(await h.api(ws, "POST", "/webhooks/wh_nope/rotate-secret"), 404, "not_found");
  });

  test("the list filters by kind", async () => {
    const kw = await h.workspace({ name: "Kinds" });
    const plain = await h.ok(kw, "POST", "/webhooks", { name: "Plain", url: "https://hooks.example.com/plain" });
    const sub = await h.ok(kw, "POST", "/webhooks/zapier/pipeline-run-events/subscribe", { targetUrl: "https://hooks.example.com/zap" });
    const ids = async (q: string) => (await h.ok(kw, "GET", `/webhooks${q}`)).data.map((x: { id: string }) => x.id);
    expect((await ids("")).sort()).toEqual([plain.id, sub.id].sort());
    expect(await ids("?kind=WEBHOOK")).toEqual([plain.id]);
    expect(await ids("?kind=PIPELINE_RUN_EVENT")).toEqual([sub.id]);
    expectError(await h.api(kw, "GET", "/webhooks?kind=zapier"), 400, "invalid_input", /^kind: must be one of WEBHOOK, PIPELINE_RUN_EVENT/);
  });

  test("DELETE removes the webhook: 404 on read, update and a second delete", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", { name: "Gone", url: "https://hooks.example.com/gone" });
    expect(await h.ok(ws, "DELETE", `/webhooks/${w.id}`)).toEqual({ id: w.id, deleted: true });
    expectError(await h.api(ws, "GET", `/webhooks/${w.id}`), 404, "not_found", `webhook '${w.id}' not found`);
    expectError(await h.api(ws, "PATCH", `/webhooks/${w.id}`, { name: "x" }), 404, "not_found");
    expectError(await h.api(ws, "DELETE", `/webhooks/${w.id}`), 404, "not_found");
    const list = await h.ok(ws, "GET", "/webhooks?limit=100");
    expect(list.data.map((x: { id: string }) => x.id)).not.toContain(w.id);
  });
});

describe("refused requests", () => {
  test("an invalid url is a 400 naming url, on create and on PATCH, and nothing changes", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", { name: "Stable", url: "https://hooks.example.com/stable" });
    const before = await h.ok(ws, "GET", "/webhooks?limit=100");
    for (const url of ["not a url", "ftp://hooks.example.com/x", "/relative/path", "", 42]) {
      expectError(await h.api(ws, "POST", "/webhooks", { name: "Bad", url }), 400, "invalid_input", /^url: /);
      expectError(await h.api(ws, "PATCH", `/webhooks/${w.id}`, { name: "Changed?", url }), 400, "invalid_input", /^url: /);
    }
    expectError(await h.api(ws, "POST", "/webhooks", { name: "No url" }), 400, "invalid_input", /^url: is required/);
    expectError(await h.api(ws, "POST", "/webhooks", { url: "https://hooks.example.com/x" }), 400, "invalid_input", /^name: is required/);
    expectError(
      await h.api(ws, "POST", "/webhooks", { name: "Typo", url: "https://hooks.example.com/x", isActiv: false }),
      400,
      "invalid_input",
      "isActiv: unknown member (check its spelling)",
    );
    expect(await h.ok(ws, "GET", "/webhooks?limit=100")).toEqual(before);
  });

  test("event types must be known and at least one; a description has a length limit", async () => {
    const w = await h.ok(ws, "POST", "/webhooks", { name: "Typed", url: "https://hooks.example.com/typed" });
    for (const [eventTypes, message] of [
      [[], /^eventTypes: must name at least one event type/],
      [["pipeline_run.exploded"], /^eventTypes\[0\]: must be one of pipeline_run\.completed, pipeline_run\.delivered, pipeline_run\.failed, pipeline_run\.acknowledged/],
      ["pipeline_run.failed", /^eventTypes: /],
    ] as const) {
      expectError(await h.api(ws, "POST", "/webhooks", { name: "Bad", url: "https://hooks.example.com/x", eventTypes }), 400, "invalid_input", message);
      expectError(await h.api(ws, "PATCH", `/webhooks/${w.id}`, { eventTypes }), 400, "invalid_input", message);
    }
    expectError(
      await h.api(ws, "POST", "/webhooks", { name: "Long", url: "https://hooks.example.com/x", description: "d".repeat(1001) }),
      400,
      "invalid_input",
      /^description: must be at most 1000 characters/,
    );
    expect((await h.ok(ws, "GET", `/webhooks/${w.id}`)).eventTypes).toEqual([...RUN_EVENT_TYPES]);
  });

  test("unknown and other workspaces' webhooks are 404 on every route", async () => {
    const mine = await h.ok(ws, "POST", "/webhooks", { name: "Private", url: "https://hooks.example.com/private" });
    for (const [w, id] of [
      [ws, "wh_nope"],
      [other, mine.id],
    ] as const) {
      expectError(await h.api(w, "GET", `/webhooks/${id}`), 404, "not_found");
      expectError(await h.api(w, "PATCH", `/webhooks/${id}`, { name: "Hijacked" }), 404, "not_found");
      expectError(await h.api(w, "DELETE", `/webhooks/${id}`), 404, "not_found");
    }
    const { secret: _, ...rest } = mine;
    expect(await h.ok(ws, "GET", `/webhooks/${mine.id}`)).toEqual(rest);
  });
});
