import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, type TestWorkspace } from "./helpers/harness";

let h: Harness;
let ws: TestWorkspace;
let sftp: { id: string; name: string };
let sftp2: { id: string; name: string };
let schema: { id: string };
let schema2: { id: string };

const ROW = { type: "object", properties: { sku: { type: "string" } } };


const pipeline = (body: Record<string, unknown>, w: TestWorkspace = ws) =>
  h.ok(w, "POST", "/pipelines", { clientId: sftp.id, schemaId: schema.id, ...body });
const webhook = (name: string, url: string, w: TestWorkspace = ws) => h.ok(w, "POST", "/webhooks", { name, url });

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ features: ["aggregated-mappings"] });
  sftp = await h.ok(ws, "POST", "/connections", { name: "Acme Warehouse", type: "SFTP", useHostedSFTP: true });
  sftp2 = await h.ok(ws, "POST", "/connections", { name: "Second Feed", type: "SFTP", useHostedSFTP: true });
  schema = await h.ok(ws, "POST", "/schemas", { name: "Rows", definition: ROW });
  schema2 = await h.ok(ws, "POST", "/schemas", { name: "Rows 2", definition: ROW });
});

afterAll(async () => {
  await h.close();
});

describe("create", () => {
  test("defaults: active, inbound, empty mappings with options and validations, no webhooks member", async () => {
    const p = await pipeline({ name: "Defaults" });
    expect(p.id).toMatch(/^pipe_/);
    expect(p).toMatchObject({
      name: "Defaults",
      workspaceId: ws.workspaceId,
      clientId: sftp.id,
      schemaId: schema.id,
      isActive: true,
      direction: "inbound",
      mappings: { fieldMappings: [], options: {}, validations: {} },
    });
    expect(Object.keys(p.mappings).sort()).toEqual(["fieldMappings", "options", "validations"]);
    expect("webhooks" in p).toBe(false);
    expect("webhookIds" in p).toBe(false);
    expect(p.createdAt).toBe(h.clock.now().toISOString());

    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got).toEqual(p);
  });

  test("mappings with only fieldMappings get empty options and validations", async () => {
    const p = await pipeline({ name: "Partial mappings", mappings: { fieldMappings: [{ source: "SKU", target: "sku" }] } });
    expect(p.mappings).toEqual({ fieldMappings: [{ source: "SKU", target: "sku" }], options: {}, validations: {} });
  });

  test("the three mapping forms are stored as sent (aggregated with the gate on)", async () => {
    const fieldMappings = [
      { source: "Item Code", target: "sku", transform: "uppercase" },
      { target: "origin", value: "warehouse-7" },
      { sources: ["First", "Last"], target: "fullName", delimiter: ", ", transform: "trim" },
      { sources: ["Street", "City"], target: "address" },
    ];
    const p = await pipeline({ name: "Three forms", mappings: { fieldMappings } });
    expect(p.mappings.fieldMappings).toEqual(fieldMappings);
    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got.mappings.fieldMappings).toEqual(fieldMappings);
  });

  test("options and validations are kept, including members the service does not know", async () => {
    const options = { format: "csv", delimiter: ";", headerRow: false, encoding: "latin1", customerTag: "eu-1", nested: { keep: [1, 2] } };
    const validations = { onInvalidRow: "quarantine", maxInvalidRows: 5, maxInvalidRatio: 0.25, notifyOps: true };
    const p = await pipeline({ name: "Options kept", mappings: { fieldMappings: [], options, validations } });
    expect(p.mappings.options).toEqual(options);
    expect(p.mappings.validations).toEqual(validations);
    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got.mappings.options).toEqual(options);
    expect(got.mappings.validations).toEqual(validations);
  });

  test("every documented transform is accepted", async () => {
    const transforms = ["trim", "uppercase", "lowercase", "number", "integer", "boolean", "date", "datetime"];
    const fieldMappings = transforms.map((transform) => ({ source: `in_${transform}`, target: `out_${transform}`, transform }));
    const p = await pipeline({ name: "All transforms", mappings: { fieldMappings } });
    expect(p.mappings.fieldMappings.map((m: { transform: string }) => m.transform)).toEqual(transforms);
  });

  test("an outbound pipeline on an SFTP connection, created inactive", async () => {
    const p = await pipeline({ name: "Outbound", direction: "outbound", isActive: false });
    expect(p.direction).toBe("outbound");
    expect(p.isActive).toBe(false);
  });
});

describe("webhooks on pipelines", () => {
  let alpha: { id: string; name: string; url: string };
  let beta: { id: string; name: string; url: string };
  let gamma: { id: string; name: string; url: string };

  beforeAll(async () => {
    beta = await webhook("beta", "https://hooks.example.com/beta");
    alpha = await webhook("alpha", "https://hooks.example.com/alpha");
    gamma = await webhook("gamma", "https://hooks.example.com/gamma");
  });

  const ref = (w: { id: string; name: string; url: string }) => ({ id: w.id, name: w.name, url: w.url });

  test("webhookIds link webhooks; responses carry webhooks as [{id, name, url}], each once", async () => {
    const p = await pipeline({ name: "Linked", webhookIds: [beta.id, alpha.id, beta.id] });
    expect(p.webhooks).toEqual([ref(alpha), ref(beta)]);
    expect("webhookIds" in p).toBe(false);
    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got.webhooks).toEqual([ref(alpha), ref(beta)]);
    const listed = await h.ok(ws, "GET", `/pipelines?clientId=${sftp.id}`);
    expect(listed.find((x: { id: string }) => x.id === p.id).webhooks).toEqual([ref(alpha), ref(beta)]);
  });

  test("an empty webhookIds on create leaves the webhooks member out", async () => {
    const p = await pipeline({ name: "Linked to none", webhookIds: [] });
    expect("webhooks" in p).toBe(false);
  });

  test("PATCH webhookIds replaces the links, leaving it out keeps them, [] unlinks all", async () => {
    const p = await pipeline({ name: "Relinked", webhookIds: [alpha.id, beta.id] });

    const replaced = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { webhookIds: [gamma.id] });
    expect(replaced.webhooks).toEqual([ref(gamma)]);

    const kept = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { name: "Relinked (renamed)" });
    expect(kept.webhooks).toEqual([ref(gamma)]);

    const cleared = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { webhookIds: [] });
    expect("webhooks" in cleared).toBe(false);
    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect("webhooks" in got).toBe(false);
  });

  test("a renamed webhook shows its new name on the pipelines it is linked to", async () => {
    const hook = await webhook("before", "https://hooks.example.com/rename");
    const p = await pipeline({ name: "Sees rename", webhookIds: [hook.id] });
    await h.ok(ws, "PATCH", `/webhooks/${hook.id}`, { name: "after", url: "https://hooks.example.com/renamed" });
    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got.webhooks).toEqual([{ id: hook.id, name: "after", url: "https://hooks.example.com/renamed" }]);
  });

  test("deleting a webhook unlinks it from its pipelines; the pipelines stay", async () => {
    const doomed = await webhook("doomed", "https://hooks.example.com/doomed");
    const keeper = await webhook("keeper", "https://hooks.example.com/keeper");
    const one = await pipeline({ name: "Loses one", webhookIds: [doomed.id, keeper.id] });
    const only = await pipeline({ name: "Loses all", webhookIds: [doomed.id] });

    await h.ok(ws, "DELETE", `/webhooks/${doomed.id}`);

    const a = await h.ok(ws, "GET", `/pipelines/${one.id}`);
    expect(a.webhooks).toEqual([ref(keeper)]);
    const b = await h.ok(ws, "GET", `/pipelines/${only.id}`);
    expect("webhooks" in b).toBe(false);
    expect(b.name).toBe("Loses all");
  });
});

describe("update", () => {
  test("PATCH changes only the members sent; updatedAt moves, createdAt stays", async () => {
    const mappings = {
      fieldMappings: [{ source: "A", target: "a" }],
      options: { delimiter: "|" },
      validations: { onInvalidRow: "skip" },
    };
    const p = await pipeline({ name: "Patched", mappings });
    h.clock.advance(5_000);

    const renamed = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { name: "Patched (v2)" });
    expect(renamed).toEqual({ ...p, name: "Patched (v2)", updatedAt: h.clock.now().toISOString() });

    const paused = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { isActive: false });
    expect(paused.isActive).toBe(false);
    expect(paused.name).toBe("Patched (v2)");
    expect(paused.mappings).toEqual(mappings);

    const moved = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { clientId: sftp2.id, schemaId: schema2.id, direction: "outbound" });
    expect(moved).toMatchObject({ clientId: sftp2.id, schemaId: schema2.id, direction: "outbound", isActive: false });

    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got).toEqual(moved);
    expect(got.createdAt).toBe(p.createdAt);
    expect(got.updatedAt).not.toBe(p.updatedAt);
  });

  test("PATCH mappings replaces the members it sends and keeps the others", async () => {
    const p = await pipeline({
      name: "Remapped",
      mappings: { fieldMappings: [{ source: "A", target: "a" }], options: { delimiter: "|" }, validations: { maxInvalidRows: 3 } },
    });
    const next = { fieldMappings: [{ target: "b", value: "fixed" }], options: { headerRow: true } };
    const res = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { mappings: next });
    expect(res.mappings).toEqual({ ...next, validations: { maxInvalidRows: 3 } });
    const got = await h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect(got.mappings).toEqual({ ...next, validations: { maxInvalidRows: 3 } });
    const cleared = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { mappings: { validations: {} } });
    expect(cleared.mappings).toEqual({ ...next, validations: {} });
  });

  test("a pipeline read back can be sent back unchanged: read-only members are ignored", async () => {
    const p = await pipeline({ name: "Round trip", mappings: { fieldMappings: [{ source: "A", target: "a", transform: "trim" }] } });
    h.clock.advance(1000);
    const res = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, p);
    const { updatedAt, ...rest } = res;
    const { updatedAt: before, ...restBefore } = p;
    expect(rest).toEqual(restBefore);
    expect(new Date(updatedAt).getTime()).toBe(new Date(before).getTime() + 1000);
  });

  test("an aggregated mapping can be saved by PATCH while the gate is on", async () => {
    const p = await pipeline({ name: "Aggregated later" });
    const res = await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { mappings: { fieldMappings: [{ sources: ["a", "b"], target: "ab", delimiter: "-" }] } });
    expect(res.mappings.fieldMappings).toEqual([{ sources: ["a", "b"], target: "ab", delimiter: "-" }]);
  });
});

describe("list", () => {
  let lw: TestWorkspace;
  const byName: Record<string, string> = {};
  let conns: Record<string, { id: string }>;

  beforeAll(async () => {
    lw = await h.workspace({ name: "Lister" });
    const sch = await h.ok(lw, "POST", "/schemas", { name: "Rows", definition: ROW });
    conns = {
      north: await h.ok(lw, "POST", "/connections", { name: "North Warehouse", type: "SFTP", useHostedSFTP: true }),
      south: await h.ok(lw, "POST", "/connections", { name: "South DEPOT", type: "SFTP", useHostedSFTP: true }),
      mail: await h.ok(lw, "POST", "/connections", { name: "Mailroom", type: "EMAIL", emailAllowedFormats: ["csv"] }),
    };
    const make: [string, string, string, boolean][] = [
      ["n-in", "north", "inbound", true],
      ["n-out", "north", "outbound", true],
      ["n-off", "north", "inbound", false],
      ["s-in", "south", "inbound", true],
      ["s-out-off", "south", "outbound", false],
      ["m-in", "mail", "inbound", true],
    ];
    for (const [name, conn, direction, isActive] of make) {
      h.clock.advance(1000);
      const p = await h.ok(lw, "POST", "/pipelines", { name, clientId: conns[conn]!.id, schemaId: sch.id, direction, isActive });
      byName[name] = p.id;
    }
  });

  async function names(query: string) {
    const res = await h.api(lw, "GET", `/pipelines${query}`);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.headers.get("x-total-count")).toBe(String(res.body.length));
    return res.body.map((p: { name: string }) => p.name);
  }

  test("lists as a bare array, newest first, with x-total-count, only the caller's pipelines", async () => {
    const res = await h.api(lw, "GET", "/pipelines");
    expect(res.status).toBe(200);
    expect(res.body.map((p: { name: string }) => p.name)).toEqual(["m-in", "s-out-off", "s-in", "n-off", "n-out", "n-in"]);
    expect(res.headers.get("x-total-count")).toBe("6");
    for (const p of res.body) expect(p.workspaceId).toBe(lw.workspaceId);
  });

  test("pages with page and limit; x-total-count is the total, not the page", async () => {
    const first = await h.api(lw, "GET", "/pipelines?limit=4");
    const second = await h.api(lw, "GET", "/pipelines?limit=4&page=2");
    expect(first.body.map((p: { name: string }) => p.name)).toEqual(["m-in", "s-out-off", "s-in", "n-off"]);
    expect(second.body.map((p: { name: string }) => p.name)).toEqual(["n-out", "n-in"]);
    for (const r of [first, second]) {
      expect(r.headers.get("x-total-count")).toBe("6");
      expect(r.headers.get("x-total-pages")).toBe("2");
    }
    const past = await h.api(lw, "GET", "/pipelines?limit=4&page=3");
    expect(past.body).toEqual([]);
  });

  test("clientId (and connectionId) filter by connection", async () => {
    expect(await names(`?clientId=${conns.north!.id}`)).toEqual(["n-off", "n-out", "n-in"]);
    expect(await names(`?connectionId=${conns.south!.id}`)).toEqual(["s-out-off", "s-in"]);
    expect(await names("?clientId=conn_unknown")).toEqual([]);
  });

  test("connectionName matches part of the connection name ignoring case; clientName is its alias", async () => {
    expect(await names("?connectionName=WAREHOUSE")).toEqual(["n-off", "n-out", "n-in"]);
    expect(await names("?connectionName=depot")).toEqual(["s-out-off", "s-in"]);
    expect(await names("?connectionName=o")).toEqual(["m-in", "s-out-off", "s-in", "n-off", "n-out", "n-in"]);
    expect(await names("?clientName=warehouse")).toEqual(["n-off", "n-out", "n-in"]);
    expect(await names("?clientName=mailROOM")).toEqual(["m-in"]);
    expect(await names("?connectionName=nowhere")).toEqual([]);
  });

  test("direction and isActive filter, alone and combined", async () => {
    expect(await names("?direction=outbound")).toEqual(["s-out-off", "n-out"]);
    expect(await names("?isActive=false")).toEqual(["s-out-off", "n-off"]);
    expect(await names("?isActive=true")).toEqual(["m-in", "s-in", "n-out", "n-in"]);
    expect(await names(`?clientId=${conns.north!.id}&direction=inbound&isActive=true`)).toEqual(["n-in"]);
    expect(await names("?connectionName=south&isActive=true")).toEqual(["s-in"]);
  });

  test("a PATCH moves a pipeline between filters", async () => {
    await h.ok(lw, "PATCH", `/pipelines/${byName["n-off"]}`, { isActive: true });
    expect(await names("?isActive=false")).toEqual(["s-out-off"]);
    await h.ok(lw, "PATCH", `/pipelines/${byName["n-off"]}`, { isActive: false });
    expect(await names("?isActive=false")).toEqual(["s-out-off", "n-off"]);
  });
});

describe("delete", () => {
  test("deletes a pipeline: 404 afterwards, gone from the list; its webhooks, connection and schema stay", async () => {
    const hook = await webhook("survivor", "https://hooks.example.com/survivor");
    const p = await pipeline({ name: "Short-lived", webhookIds: [hook.id] });

    const del = await h.ok(ws, "DELETE", `/pipelines/${p.id}`);
    expect(del).toEqual({ id: p.id, deleted: true });

    expect((await h.api(ws, "GET", `/pipelines/${p.id}`)).status).toBe(404);
    const list = await h.ok(ws, "GET", "/pipelines?limit=100");
    expect(list.map((x: { id: string }) => x.id)).not.toContain(p.id);
    expect((await h.api(ws, "GET", `/webhooks/${hook.id}`)).status).toBe(200);
    expect((await h.api(ws, "GET", `/connections/${sftp.id}`)).status).toBe(200);
    expect((await h.api(ws, "GET", `/schemas/${schema.id}`)).status).toBe(200);

    const again = await pipeline({ name: "Short-lived" });
    expect(again.id).not.toBe(p.id);
  });
});
