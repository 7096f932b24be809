import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createGraphqlWebSocket } from "../graphql/ws";
import { purgeAuditEvents } from "../src/services/audit";
import { createKey } from "../src/services/keys/create-key";
import { revokeKey } from "../src/services/keys/revoke-key";
import { setFeature } from "../src/services/workspaces/update-workspace";
import type { AuditRecord } from "./helpers/audit";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, startUpload } from "./helpers/runs";

type Event = AuditRecord;

describe("the audit log", () => {
  let h: Harness;
  let ws: TestWorkspace;
  let member: { apiKey: string; id: string };
  const events = async (query = "") => {
    const res = await h.api<{ data: Event[]; pagination: { total: number } }>(ws, "GET", `/audit-events${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    h = await Harness.start({ startJobs: false });
    ws = await h.workspace();
    member = await createKey(h.svc, { workspaceId: ws.workspaceId, role: "member", name: "ci member" });
  }, 30_000);
  afterAll(() => h.close());

  test("a REST create: who, what (member names, never values), the surface and the request id", async () => {
    const res = await h.request("POST", "/connections", {
      key: ws.apiKey,
      version: "2026-05-25",
      headers: { "x-request-id": "req-audit-1" },
      body: { name: "Acme", type: "SFTP", useHostedSFTP: true, sftpPassword: "s3cret-Value-42" },
    });
    expect(res.status).toBe(200);
    const page = await events(`?resourceId=${res.body.id}`);
    expect(page.data).toHaveLength(1);
    const e = page.data[0]!;
    expect(e).toMatchObject({
      action: "connection.create",
      resourceType: "connection",
      resourceId: res.body.id,
      actor: { type: "key", id: ws.keyId, name: "first admin key" },
      surface: "rest",
      requestId: "req-audit-1",
    });
    expect(e.fields).toContain("sftpPassword");
    expect(e.fields).toContain("name");
    expect(JSON.stringify(page)).not.toContain("s3cret-Value-42");
  });

  test("GraphQL and tRPC changes are recorded with their surface", async () => {
    const schema = await h.ok(ws, "POST", "/schemas", { name: "Rows", definition: { type: "object", properties: { a: { type: "string" } } } });
    const g = await h.graphql(ws.apiKey, `mutation($id: ID!) { updateSchema(id: $id, input: { description: "d" }) { id } }`, { id: schema.id });
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect(g.body.errors).toBeUndefined();
    const t = await h.request("POST", "/trpc/schemas.delete", { key: ws.apiKey, body: { id: schema.id } });
    expect(t.status, JSON.stringify(t.body)).toBe(200);
    const page = await events(`?resourceType=schema&resourceId=${schema.id}`);
    expect(page.data.map((e) => [e.action, e.surface])).toEqual([
      ["schema.delete", "trpc"],
      ["schema.update", "graphql"],
      ["schema.create", "rest"],
    ]);
    expect(page.data[1]!.fields).toEqual(["description"]);
  });

  test("a refused change leaves no record: the record commits with the change", async () => {
    const before = (await events()).pagination.total;
    const dup = await h.api(ws, "POST", "/connections", { name: "Acme", type: "SFTP" });
    expect(dup.status).toBe(409);
    expect((await events()).pagination.total).toBe(before);
  });

  test("run upload, acknowledge; webhook rotation; the CLI's key and feature changes", async () => {
    const p = await createPipeline(h, ws);
    const run = await startUpload(h, ws, p.pipeline.id);
    await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
    const runEvents = await events(`?resourceType=run&resourceId=${run.id}`);
    expect(runEvents.data.map((e) => e.action)).toEqual(["run.acknowledge", "run.create"]);

    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Hook", url: "https://hooks.example.com/x", eventTypes: ["pipeline_run.failed"] });
    const rotated = await h.ok(ws, "POST", `/webhooks/${hook.id}/rotate-secret`);
    const hookEvents = await events(`?resourceId=${hook.id}`);
    expect(hookEvents.data.map((e) => e.action)).toEqual(["webhook.rotateSecret", "webhook.create"]);
    expect(JSON.stringify(hookEvents)).not.toContain(rotated.secret);
    expect(JSON.stringify(hookEvents)).not.toContain(hook.secret);

    await revokeKey(h.svc, { keyId: member.id });
    await setFeature(h.svc, { workspaceId: ws.workspaceId, feature: "aggregated-mappings", enabled: true });
    const cli = await events("?actor=cli");
    expect(cli.data.map((e) => e.action)).toEqual(["workspace.enableFeature", "apiKey.revoke", "apiKey.create", "apiKey.create", "workspace.create"]);
    expect(cli.data.every((e) => e.surface === "cli" && e.actor.type === "cli" && e.actor.id === undefined)).toBe(true);
    // Revoking twice changes nothing and records nothing.
    await revokeKey(h.svc, { keyId: member.id });
    expect((await events("?action=apiKey.revoke")).pagination.total).toBe(1);
  });

  test("documents: changes of the object store are recorded too", async () => {
    const conn = await h.ok(ws, "POST", "/connections", { name: "Docs", type: "SFTP" });
    await h.ok(ws, "POST", "/documents/folders", { connectionId: conn.id, path: "reports" });
    await h.ok(ws, "POST", "/documents/rename", { connectionId: conn.id, path: "reports", name: "archive" });
    const page = await events("?resourceType=document");
    expect(page.data.map((e) => [e.action, e.resourceId])).toEqual([
      ["document.rename", `${conn.id}:reports`],
      ["document.createFolder", `${conn.id}:reports`],
    ]);
  });

  test("filters, pages and the same log on GraphQL and tRPC", async () => {
    const all = await events("?limit=100");
    const byKey = await events(`?actor=${ws.keyId}&limit=100`);
    expect(byKey.data.every((e) => e.actor.id === ws.keyId)).toBe(true);
    expect(byKey.pagination.total + (await events("?actor=cli")).pagination.total).toBe(all.pagination.total);
    const page2 = await events("?limit=2&page=2");
    expect(page2.data.map((e) => e.id)).toEqual(all.data.slice(2, 4).map((e) => e.id));
    expect((await events("?from=2030-01-01")).pagination.total).toBe(0);
    expect((await events("?to=2026-11-22")).pagination.total).toBe(all.pagination.total);
    const bad = await h.api(ws, "GET", "/audit-events?from=yesterday");
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("from");

    const g = await h.graphql<{ auditEvents: { data: Event[]; pagination: { total: number } } }>(
      ws.apiKey,
      `{ auditEvents(action: "connection.create") { data { action surface actor { type id name } fields } pagination { total } } }`,
    );
    expect(g.body.data?.auditEvents.pagination.total).toBe(3);
    const t = await h.trpc(ws).auditEvents.list({ action: "connection.create" });
    expect(t.data.map((e) => e.action)).toEqual(["connection.create", "connection.create", "connection.create"]);
    expect(g.body.data?.auditEvents.data[0]?.actor).toEqual({ type: "key", id: ws.keyId, name: "first admin key" });
    expect(t.pagination.total).toBe(3);
  });

  test("admin keys only, on every surface", async () => {
    const m = await createKey(h.svc, { workspaceId: ws.workspaceId, role: "member", name: "reader" });
    expect((await h.request("GET", "/audit-events", { key: m.apiKey })).status).toBe(403);
    const g = await h.graphql(m.apiKey, "{ auditEvents { pagination { total } } }");
    expect(g.body.errors?.[0]?.extensions.error).toBe("forbidden");
    expect((await h.request("GET", "/trpc/auditEvents.list", { key: m.apiKey })).status).toBe(403);
  });

  test("append-only: no route changes a record; the retention job deletes what is older than AUDIT_RETENTION_DAYS", async () => {
    const one = (await events("?limit=1")).data[0]!;
    for (const method of ["PATCH", "PUT", "DELETE"]) {
      expect((await h.api(ws, method, `/audit-events/${one.id}`, method === "DELETE" ? undefined : {})).status).toBe(404);
    }
    const total = (await events()).pagination.total;
    h.clock.advance(364 * 86_400_000);
    expect(await purgeAuditEvents(h.svc)).toBe(0);
    await h.ok(ws, "POST", "/connections", { name: "Later", type: "SFTP" });
    h.clock.advance(2 * 86_400_000);
    // In batches of 3 (short statements for a long backlog): every one of them, the later record kept.
    expect(total).toBeGreaterThan(6);
    expect(await purgeAuditEvents(h.svc, 3)).toBe(total);
    const left = await events();
    expect(left.data.map((e) => e.action)).toEqual(["connection.create"]);
  });

  test("served by a listening server, the record carries the client's address", async () => {
    // The address is looked up only when a record reads it (src/transport/admission.ts): served the way src/main.ts serves.
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", ...createGraphqlWebSocket(h.svc, { maxJsonBodyBytes: 1 << 20 }).serve((r) => h.service.http.handle(r)) });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/connections`, {
        method: "POST",
        headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25", "content-type": "application/json" },
        body: JSON.stringify({ name: "Over the wire", type: "SFTP", useHostedSFTP: true }),
      });
      const created = (await res.json()) as { id: string };
      expect(res.status).toBe(200);
      const [e] = (await events(`?resourceId=${created.id}`)).data;
      expect(e).toMatchObject({ action: "connection.create", surface: "rest", requestId: res.headers.get("x-request-id")! });
      expect(e!.address).toBe("127.0.0.1");
    } finally {
      await server.stop(true);
    }
  });
});
