import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, NOW, type TestWorkspace } from "./helpers/harness";

let h: Harness;
let ws: TestWorkspace;

const ROW = { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer", minimum: 0 } }, required: ["sku"] };

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});

afterAll(async () => {
  await h.close();
});

async function create(body: Record<string, unknown>, w: TestWorkspace = ws) {
  const res = await h.api(w, "POST", "/schemas", body);
  expect(res.status).toBe(200);
  return res.body;
}

describe("create and read", () => {
  test("a schema is created with its definition and isActive true, and reads back the same", async () => {
    const created = await create({ name: "Orders", definition: ROW });
    expect(created.id).toMatch(/^sch_/);
    expect(created.name).toBe("Orders");
    expect(created.workspaceId).toBe(ws.workspaceId);
    expect(created.definition).toEqual(ROW);
    expect(created.isActive).toBe(true);
    expect("description" in created).toBe(false);
    expect(created.createdAt).toBe(NOW.toISOString());
    expect(created.updatedAt).toBe(created.createdAt);

    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);
    expect(got.headers.get("service-version")).toBe("2026-05-25");
  });

  test("isActive cannot be switched off: a request's isActive is ignored and reads stay true", async () => {
    const created = await create({ name: "Always active", definition: ROW, isActive: false });
    expect(created.isActive).toBe(true);
    const patched = await h.api(ws, "PATCH", `/schemas/${created.id}`, { isActive: false });
    expect(patched.status).toBe(200);
    expect(patched.body.isActive).toBe(true);
    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect(got.body.isActive).toBe(true);
  });

  test("a legacy fields array is accepted and ignored: not stored, not returned", async () => {
    const fields = [{ name: "legacy", type: "string" }];
    const created = await create({ name: "Legacy", definition: ROW, fields });
    expect("fields" in created).toBe(false);
    expect(created.definition).toEqual(ROW);
    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect("fields" in got.body).toBe(false);
    expect(JSON.stringify(got.body)).not.toContain("legacy");

    const patched = await h.api(ws, "PATCH", `/schemas/${created.id}`, { fields: [{ name: "other" }] });
    expect(patched.status).toBe(200);
    expect("fields" in patched.body).toBe(false);
    expect(patched.body.definition).toEqual(ROW);
  });

  test("a description is set on create, changed, kept when left out, and cleared with null", async () => {
    const created = await create({ name: "Described", definition: ROW, description: "Nightly order feed" });
    expect(created.description).toBe("Nightly order feed");

    const changed = await h.api(ws, "PATCH", `/schemas/${created.id}`, { description: "Hourly order feed" });
    expect(changed.body.description).toBe("Hourly order feed");

    const kept = await h.api(ws, "PATCH", `/schemas/${created.id}`, { name: "Described (renamed)" });
    expect(kept.body.description).toBe("Hourly order feed");
    expect(kept.body.name).toBe("Described (renamed)");

    const cleared = await h.api(ws, "PATCH", `/schemas/${created.id}`, { description: null });
    expect(cleared.status).toBe(200);
    expect("description" in cleared.body).toBe(false);
    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect("description" in got.body).toBe(false);
  });

  test("a draft-07 definition (definitions, $ref, tuple items) is accepted and stored verbatim", async () => {
    const definition = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      definitions: { money: { type: "number", multipleOf: 0.01 } },
      properties: {
        total: { $ref: "#/definitions/money" },
        pair: { type: "array", items: [{ type: "string" }, { type: "number" }] },
      },
      required: ["total"],
    };
    const created = await create({ name: "Draft 07", definition });
    expect(created.definition).toEqual(definition);
    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect(got.body.definition).toEqual(definition);
  });

  test("a draft 2020-12 definition ($defs, $ref, prefixItems, formats) is accepted, with or without $schema", async () => {
    const definition = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { email: { type: "string", format: "email" } },
      properties: {
        contact: { $ref: "#/$defs/email" },
        pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] },
        shippedOn: { type: "string", format: "date" },
      },
      required: ["contact"],
    };
    const created = await create({ name: "Draft 2020", definition });
    expect(created.definition).toEqual(definition);

    const { $schema: _, ...implicit } = definition;
    const implicitCreated = await create({ name: "Draft 2020 implicit", definition: implicit });
    expect(implicitCreated.definition).toEqual(implicit);
  });

  test("the order of properties is kept as sent, on every database (it is the order of columns)", async () => {
    const definition = { type: "object", properties: { zeta: { type: "string" }, alpha: { type: "string" }, mm: { type: "integer" } } };
    const created = await h.api(ws, "POST", "/schemas", { name: "Column order", definition });
    const read = await h.api(ws, "GET", `/schemas/${created.body.id}`);
    expect(Object.keys(read.body.definition.properties)).toEqual(["zeta", "alpha", "mm"]);
    expect(JSON.stringify(read.body.definition)).toBe(JSON.stringify(definition));
  });

  test("definitions with the same $id can be saved more than once and in different workspaces", async () => {
    const definition = { $id: "https://schemas.example.com/order-row", type: "object", properties: { sku: { type: "string" } } };
    const first = await create({ name: "With id", definition });
    const second = await create({ name: "With id, again", definition: { ...definition, properties: { code: { type: "string" } } } });
    expect(second.definition.properties).toEqual({ code: { type: "string" } });

    const resaved = await h.api(ws, "PATCH", `/schemas/${first.id}`, { definition });
    expect(resaved.status).toBe(200);
    expect(resaved.body.definition).toEqual(definition);

    const other = await h.workspace({ name: "Other tenant" });
    const elsewhere = await create({ name: "With id", definition }, other);
    expect(elsewhere.workspaceId).toBe(other.workspaceId);
  });
});

describe("update", () => {
  test("PATCH changes only what it names; updatedAt moves, createdAt stays", async () => {
    const created = await create({ name: "Shipments", definition: ROW, description: "keep me" });
    h.clock.advance(60_000);
    const definition = { type: "object", properties: { tracking: { type: "string" } }, required: ["tracking"] };
    const patched = await h.api(ws, "PATCH", `/schemas/${created.id}`, { definition });
    expect(patched.status).toBe(200);
    expect(patched.body.definition).toEqual(definition);
    expect(patched.body.name).toBe("Shipments");
    expect(patched.body.description).toBe("keep me");
    expect(patched.body.createdAt).toBe(created.createdAt);
    expect(patched.body.updatedAt).toBe(h.clock.now().toISOString());
    expect(patched.body.updatedAt).not.toBe(created.updatedAt);

    const renamed = await h.api(ws, "PATCH", `/schemas/${created.id}`, { name: "Shipments v2" });
    expect(renamed.body.name).toBe("Shipments v2");
    expect(renamed.body.definition).toEqual(definition);

    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect(got.body).toEqual(renamed.body);
  });

  test("renaming a schema to its own current name is not a conflict", async () => {
    const created = await create({ name: "Same name", definition: ROW });
    const patched = await h.api(ws, "PATCH", `/schemas/${created.id}`, { name: "Same name", description: "x" });
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe("x");
  });
});

describe("list", () => {
  let lw: TestWorkspace;
  const names = ["Orders EU", "orders us", "Invoices", "Returns", "Backorders 100%"];
  const ids: string[] = [];

  beforeAll(async () => {
    lw = await h.workspace({ name: "Lister" });
    for (const name of names) {
      h.clock.advance(1000);
      ids.push((await create({ name, definition: ROW }, lw)).id);
    }
  });

  test("lists as {data, pagination}, newest first, only the caller's schemas", async () => {
    const res = await h.api(lw, "GET", "/schemas");
    expect(res.status).toBe(200);
    expect(res.body.pagination).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1 });
    expect(res.body.data.map((s: { id: string }) => s.id)).toEqual([...ids].reverse());
    for (const s of res.body.data) {
      expect(s.workspaceId).toBe(lw.workspaceId);
      expect(s.isActive).toBe(true);
    }
  });

  test("pages through with page and limit without gaps or repeats", async () => {
    const seen: string[] = [];
    for (const [page, size] of [
      [1, 2],
      [2, 2],
      [3, 1],
    ] as const) {
      const res = await h.api(lw, "GET", `/schemas?page=${page}&limit=2`);
      expect(res.status).toBe(200);
      expect(res.body.pagination).toEqual({ page, limit: 2, total: 5, totalPages: 3 });
      expect(res.body.data).toHaveLength(size);
      seen.push(...res.body.data.map((s: { id: string }) => s.id));
    }
    expect(seen).toEqual([...ids].reverse());
    const past = await h.api(lw, "GET", "/schemas?page=4&limit=2");
    expect(past.body.data).toEqual([]);
    expect(past.body.pagination.total).toBe(5);
  });

  test("name filters by a case-insensitive part of the name", async () => {
    const res = await h.api(lw, "GET", "/schemas?name=ORDERS");
    expect(res.body.data.map((s: { name: string }) => s.name).sort()).toEqual(["Backorders 100%", "Orders EU", "orders us"]);
    expect(res.body.pagination.total).toBe(3);

    const paged = await h.api(lw, "GET", "/schemas?name=orders&limit=1&page=2");
    expect(paged.body.data).toHaveLength(1);
    expect(paged.body.pagination).toEqual({ page: 2, limit: 1, total: 3, totalPages: 3 });

    const none = await h.api(lw, "GET", "/schemas?name=payroll");
    expect(none.body).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0 } });
  });

  test("% and _ in the name filter are literal characters, not wildcards", async () => {
    const percent = await h.api(lw, "GET", `/schemas?name=${encodeURIComponent("0%")}`);
    expect(percent.body.data.map((s: { name: string }) => s.name)).toEqual(["Backorders 100%"]);
    const underscore = await h.api(lw, "GET", "/schemas?name=order_");
    expect(underscore.body.data).toEqual([]);
  });
});

describe("delete", () => {
  test("deletes a schema: reads 404 afterwards, it leaves the list, and its name is free again", async () => {
    const created = await create({ name: "Temporary", definition: ROW });
    const del = await h.api(ws, "DELETE", `/schemas/${created.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: created.id, deleted: true });

    const got = await h.api(ws, "GET", `/schemas/${created.id}`);
    expect(got.status).toBe(404);
    const list = await h.api(ws, "GET", "/schemas?name=Temporary");
    expect(list.body.data).toEqual([]);

    const again = await create({ name: "Temporary", definition: ROW });
    expect(again.id).not.toBe(created.id);
  });

  test("a schema can be deleted once the pipeline that used it is gone", async () => {
    const schema = await create({ name: "Used then freed", definition: ROW });
    const conn = await h.api(ws, "POST", "/connections", { name: "Freed conn", type: "SFTP", useHostedSFTP: true });
    expect(conn.status).toBe(200);
    const pipe = await h.api(ws, "POST", "/pipelines", { name: "User of schema", clientId: conn.body.id, schemaId: schema.id });
    expect(pipe.status).toBe(200);

    expect((await h.api(ws, "DELETE", `/schemas/${schema.id}`)).status).toBe(409);
    expect((await h.api(ws, "DELETE", `/pipelines/${pipe.body.id}`)).status).toBe(200);
    const del = await h.api(ws, "DELETE", `/schemas/${schema.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: schema.id, deleted: true });
  });
});
