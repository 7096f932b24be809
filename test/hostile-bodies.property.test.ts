import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getTableName, is, Table } from "drizzle-orm";
import fc from "fast-check";
import postgres from "postgres";
import { getNamedType, GraphQLObjectType, isObjectType, isInterfaceType, isUnionType, type GraphQLField } from "graphql";
import { schema as graphqlSchema } from "../graphql/schema";
import { ERROR_CODES } from "../src/domain/errors";
import { HTTP_STATUS } from "../src/transport/status";
import { appRouter } from "../trpc/router";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * Generated and hostile bodies thrown at every write route of the three
 * surfaces: REST routes from the app's route list, GraphQL mutations from the
 * schema, tRPC mutations from the router, so routes added later are covered
 * without a change here. Whatever the body: no 5xx, the surface's standard
 * error body, the process still answers, and a refused request wrote nothing.
 * Bodies of the kinds every surface must refuse (nesting past the limit,
 * invalid UTF-8, a `__proto__` member, NUL or half a surrogate pair, a wrong
 * content type, over the size limit) are refused with a 4xx.
 */
let h: Harness;
let ws: TestWorkspace;
const ids: Record<string, string> = {};
/** Member names the API documents (from /openapi.json): generated objects use them, so bodies get past "unknown member". */
let vocabulary: string[] = [];

const enc = new TextEncoder();
/** A smaller JSON limit than the default 1 MiB, so that bodies over it and long strings near it are cheap to make. */
const MAX_BODY = 64 * 1024;
const MISSING_ID = "x_0000000000000000000000missing";
const WRONG_TYPES = ["application/xml", "text/html", "application/x-www-form-urlencoded", "application/octet-stream", "image/png", "multipart/form-data; boundary=x"];
/** Bytes no UTF-8 decoder accepts: a stray continuation, a bad pair, a CESU-8 surrogate, an overlong slash, a 5-byte form. */
const INVALID_UTF8 = [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]];
/** JSON number literals beyond what a double holds, and one that rounds to zero. */
const HUGE_NUMBERS = ["1e400", "-1e400", "123456789012345678901234567890123456789", "1e-400", "9007199254740993", "-0"];
/** JSON escapes for text that no store keeps: NUL, lone surrogates. */
const UNSTORABLE = ['"\\u0000"', '"a\\ud800"', '"\\udfffz"', '"x\\u0000y"'];

interface Body {
  bytes: Uint8Array;
  contentType: string;
  /** Every surface must refuse it (4xx, or a GraphQL error), whatever the route. */
  refuse: boolean;
  what: string;
}

const body = (text: string | Uint8Array, what: string, refuse = false, contentType = "application/json"): Body => ({
  bytes: typeof text === "string" ? enc.encode(text) : text,
  contentType,
  refuse,
  what,
});

const concat = (...parts: (string | number[])[]) => {
  const chunks = parts.map((p) => (typeof p === "string" ? enc.encode(p) : Uint8Array.from(p)));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
};

/** A JSON value whose members are drawn from the API's vocabulary as often as not. */
function jsonish(depth = 3): fc.Arbitrary<unknown> {
  const key = fc.oneof(fc.constantFrom(...vocabulary), fc.string({ maxLength: 12 }), fc.constantFrom("constructor", "prototype", "toString", "hasOwnProperty", "valueOf"));
  const leaf = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: "grapheme", maxLength: 20 }),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom("", " ", "0", "-1", "true", "null", "SFTP", "EMAIL", "inbound", "outbound", "csv", "https://hooks.example.com/x", "2026-01-01T00:00:00Z"),
    fc.integer({ min: 1_000, max: 20_000 }).map((n) => "x".repeat(n)),
  );
  return fc.letrec<{ value: unknown }>((tie) => ({
    value:
      depth <= 0
        ? leaf
        : fc.oneof(
            { depthSize: "small", withCrossShrink: true },
            leaf,
            fc.array(tie("value"), { maxLength: 4 }),
            fc.dictionary(key, tie("value"), { maxKeys: 6 }),
          ),
  })).value;
}

/** Generated bodies: plain JSON, JSON with a hostile token spliced in, and the kinds that must be refused. */
function bodies(wrap: (inner: string) => string): fc.Arbitrary<Body> {
  const json = jsonish().map((v) => JSON.stringify(v) ?? "null");
  const object = fc.dictionary(fc.constantFrom(...vocabulary), jsonish(2), { minKeys: 1, maxKeys: 6 }).map((v) => JSON.stringify(v));
  /** An object of documented members with one member's value replaced by raw JSON text. */
  const spliced = (token: fc.Arbitrary<string>) =>
    fc.tuple(fc.dictionary(fc.constantFrom(...vocabulary), jsonish(1), { maxKeys: 4 }), fc.constantFrom(...vocabulary), token).map(([o, k, t]) => {
      const rest = JSON.stringify(o).slice(1, -1);
      return `{${JSON.stringify(k)}:${t}${rest ? `,${rest}` : ""}}`;
    });
  const nested = (min: number, max: number) =>
    fc.tuple(fc.integer({ min, max }), fc.boolean(), fc.constantFrom(...vocabulary)).map(([n, arrays, k]) =>
      arrays ? `${"[".repeat(n)}1${"]".repeat(n)}` : `${`{${JSON.stringify(k)}:`.repeat(n)}1${"}".repeat(n)}`,
    );
  return fc.oneof(
    json.map((t) => body(wrap(t), "generated JSON")),
    object.map((t) => body(wrap(t), "documented members")),
    spliced(fc.constantFrom(...HUGE_NUMBERS)).map((t) => body(wrap(t), "huge number")),
    spliced(fc.constantFrom(...UNSTORABLE)).map((t) => body(wrap(t), "NUL or lone surrogate", true)),
    spliced(jsonish(1).map((v) => `{"__proto__":${JSON.stringify(v) ?? "null"}}`)).map((t) => body(wrap(t), "__proto__ member", true)),
    spliced(fc.constant('{"\\u005f_proto__":{"polluted":true}}')).map((t) => body(wrap(t), "escaped __proto__", true)),
    spliced(fc.constant('{"constructor":{"prototype":{"polluted":true}}}')).map((t) => body(wrap(t), "constructor.prototype")),
    nested(1, 60).map((t) => body(wrap(t), "nesting within the limit")),
    nested(70, 5_000).map((t) => body(wrap(t), "nesting past the limit", true)),
    fc.tuple(fc.constantFrom(...INVALID_UTF8), fc.constantFrom(...vocabulary)).map(([bad, k]) => {
      const [before, after] = wrap(`{${JSON.stringify(k)}:"@@"}`).split("@@") as [string, string];
      return body(concat(before, bad, after), "invalid UTF-8", true);
    }),
    fc.uint8Array({ maxLength: 300 }).map((b) => body(b, "binary as JSON")),
    fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.constantFrom(...WRONG_TYPES)).map(([b, type]) => body(b, `binary as ${type}`, true, type)),
    fc.tuple(json, fc.constantFrom(...WRONG_TYPES)).map(([t, type]) => body(wrap(t), `JSON as ${type}`, true, type)),
  );
}

/** Every kind of body once, for the sweep of every route. */
function fixedBodies(wrap: (inner: string) => string): Body[] {
  const k = vocabulary.includes("name") ? "name" : vocabulary[0]!;
  return [
    body("", "empty"),
    body(wrap("null"), "null"),
    body(wrap("[]"), "array"),
    body(wrap(`{"${k}":${"x".repeat(2)}`), "malformed"),
    body(wrap(`{"${k}":1e400}`), "huge number"),
    body(wrap(`{"${k}":"x\\u0000"}`), "NUL", true),
    body(wrap(`{"${k}":"\\ud800"}`), "lone surrogate", true),
    body(wrap(`{"__proto__":{"polluted":true},"${k}":"a"}`), "__proto__", true),
    body(wrap(`{"constructor":{"prototype":{"polluted":true}}}`), "constructor.prototype"),
    body(wrap(`${"[".repeat(20_000)}${"]".repeat(20_000)}`), "deep arrays", true),
    body(wrap(`${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`), "deep objects", true),
    body(concat(...(wrap(`{"${k}":"@@"}`).split("@@") as [string, string]).flatMap((part, i) => (i === 0 ? [part, [0xff, 0xfe]] : [part]))), "invalid UTF-8", true),
    body(wrap(`{"${k}":"${"x".repeat(MAX_BODY - 1_000)}"}`), "long string"),
    body(wrap(`{"${k}":"${"x".repeat(MAX_BODY + 1)}"}`), "over the size limit", true),
    body(Uint8Array.from([0, 1, 2, 0xff, 0x89, 0x50, 0x4e, 0x47]), "binary", true),
    body(wrap(`{"${k}":"a"}`), "JSON as XML", true, "application/xml"),
    body("", "empty as XML", true, "application/xml"),
  ];
}

// ---- the database: nothing written --------------------------------------------------------------

type Prepared = { execute(): Promise<Record<string, unknown>[]> | Record<string, unknown>[] };
let everyTable: [string, Prepared][] | null = null;
let pgSnapshot: { sql: postgres.Sql; query: string } | null = null;

/**
 * Every table's rows (what a refused request must leave as it was);
 * `lastUsedAt` is a hint written by reads. Postgres: one statement digesting
 * every table (a round trip per table made the test slow); SQLite: each
 * table's rows, prepared once.
 */
async function snapshot(): Promise<string> {
  // Every request, refused or not, is counted against its key's rate-limit budget: those counters are meant to move.
  const COUNTERS = new Set(["rate_limit_windows", "login_throttle"]);
  const tables = (Object.entries(h.svc.db.t).filter(([, table]) => is(table, Table)) as [string, Table][]).filter(([, t]) => !COUNTERS.has(getTableName(t)));
  const url = h.childEnv().DATABASE_URL;
  if (url) {
    pgSnapshot ??= {
      sql: postgres(url, { max: 1, onnotice: () => {} }),
      query: `select ${tables
        .map(([, t]) => `(select md5(coalesce(string_agg((to_jsonb(r) - 'last_used_at')::text, ',' order by (to_jsonb(r) - 'last_used_at')::text), '')) from "${getTableName(t)}" r)`)
        .join(" || ':' || ")} as digest`,
    };
    const [row] = await pgSnapshot.sql.unsafe(pgSnapshot.query);
    return row!.digest as string;
  }
  everyTable ??= tables.map(([name, table]) => [
    name,
    (h.svc.db.read.select().from(table as never) as unknown as { prepare(n: string): Prepared }).prepare(`snapshot_${name}`),
  ]);
  const rows = await Promise.all(
    everyTable.map(async ([name, q]) => `${name}:${(await q.execute()).map((r) => JSON.stringify({ ...r, lastUsedAt: undefined })).sort().join("\n")}`),
  );
  return rows.join("\n\n");
}

// ---- the surfaces ------------------------------------------------------------------------------

interface Route {
  surface: "rest" | "graphql" | "trpc";
  label: string;
  /** The request for a body (GraphQL and tRPC wrap it). */
  send(b: Body): Promise<Response>;
  wrap(inner: string): string;
}

async function send(method: string, path: string, b: Body): Promise<Response> {
  const headers: Record<string, string> = { "x-api-key": ws.apiKey, "service-version": "2026-05-25", "content-type": b.contentType };
  return h.service.http.handle(new Request(`http://localhost${path}`, { method, headers, body: b.bytes.length > 0 ? (b.bytes as Uint8Array<ArrayBuffer>) : undefined }));
}

const RESOURCE_OF: Record<string, string> = { connections: "connection", clients: "connection", schemas: "schema", pipelines: "pipeline", webhooks: "webhook" };

function restRoutes(): Route[] {
  return h.service.http.routes
    .filter((r) => ["POST", "PUT", "PATCH"].includes(r.method) && r.path !== "/graphql" && !r.path.startsWith("/trpc"))
    .map((r) => {
      // Updates get a real row (so bodies reach the service's checks); actions (retry, test, upload) an id that does not exist.
      const update = r.method === "PATCH" || r.method === "PUT";
      const path = r.path
        .replace(/:(\w+)/g, (_, param: string) => {
          const resource = RESOURCE_OF[r.path.split("/")[1]!];
          return update && param === "id" && resource ? ids[resource]! : MISSING_ID;
        })
        .replace("*", "x");
      return { surface: "rest" as const, label: `${r.method} ${r.path}`, send: (b: Body) => send(r.method, path, b), wrap: (t: string) => t };
    });
}

function graphqlRoutes(): Route[] {
  const mutation = graphqlSchema.getMutationType();
  if (!mutation) return [];
  return Object.values(mutation.getFields()).map((f: GraphQLField<unknown, unknown>) => {
    const named = getNamedType(f.type);
    const selection = isObjectType(named) || isInterfaceType(named) ? " { __typename }" : isUnionType(named) ? " { __typename }" : "";
    const decl = f.args.map((a) => `$${a.name}: ${String(a.type)}`).join(", ");
    const call = f.args.map((a) => `${a.name}: $${a.name}`).join(", ");
    const query = `mutation${decl ? `(${decl})` : ""} { ${f.name}${call ? `(${call})` : ""}${selection} }`;
    // The generated value goes in the first argument that is not an id; ids name a row of the caller's (updates) or none.
    const target = f.args.find((a) => getNamedType(a.type).name !== "ID") ?? f.args[0];
    const fixed = f.args
      .filter((a) => a !== target)
      .map((a) => `${JSON.stringify(a.name)}:${JSON.stringify(fixtureFor(f.name, named as GraphQLObjectType))}`);
    const wrap = (inner: string) =>
      `{"query":${JSON.stringify(query)},"variables":{${[...fixed, ...(target ? [`${JSON.stringify(target.name)}:${inner}`] : [])].join(",")}}}`;
    return { surface: "graphql" as const, label: `mutation ${f.name}`, send: (b: Body) => send("POST", "/graphql", b), wrap };
  });
}

function fixtureFor(field: string, type: { name: string }): string {
  const resource = type.name.toLowerCase();
  return field.startsWith("update") && ids[resource] ? ids[resource] : MISSING_ID;
}

function trpcRoutes(): Route[] {
  const procedures = (appRouter._def as unknown as { procedures: Record<string, { _def: { type: string } }> }).procedures;
  return Object.entries(procedures)
    .filter(([, p]) => p._def.type === "mutation")
    .flatMap(([path]) => {
      const resource = RESOURCE_OF[path.split(".")[0]!];
      const id = path.endsWith(".update") && resource ? ids[resource] : MISSING_ID;
      const single = (t: string) => t;
      const withId = (t: string) => `{"id":${JSON.stringify(id)},"data":${t}}`;
      return [
        { surface: "trpc" as const, label: `${path}`, send: (b: Body) => send("POST", `/trpc/${path}`, b), wrap: single },
        { surface: "trpc" as const, label: `${path} {id, data}`, send: (b: Body) => send("POST", `/trpc/${path}`, b), wrap: withId },
        { surface: "trpc" as const, label: `${path} batch`, send: (b: Body) => send("POST", `/trpc/${path}?batch=1`, b), wrap: (t: string) => `{"0":${t}}` },
      ];
    });
}

// ---- what every reply must be ------------------------------------------------------------------

const CODES = new Set<string>(ERROR_CODES);

function expectErrorExtensions(e: unknown, where: string) {
  const ext = (e as { extensions?: { error?: string; statusCode?: number; code?: string } }).extensions;
  expect(typeof (e as { message?: unknown }).message, where).toBe("string");
  expect(CODES.has(ext?.error ?? ""), `${where}: extensions.error ${ext?.error}`).toBe(true);
  expect(ext!.error, where).not.toBe("internal");
  expect(ext!.statusCode, where).toBe(HTTP_STATUS[ext!.error as keyof typeof HTTP_STATUS]);
}

function expectTrpcError(e: unknown, status: number, where: string) {
  const err = (e as { error?: { message?: unknown; data?: { error?: string; statusCode?: number; httpStatus?: number } } }).error;
  expect(typeof err?.message, where).toBe("string");
  expect(CODES.has(err?.data?.error ?? ""), `${where}: data.error ${err?.data?.error}`).toBe(true);
  expect(err!.data!.error, where).not.toBe("internal");
  expect(err!.data!.statusCode, where).toBe(HTTP_STATUS[err!.data!.error as keyof typeof HTTP_STATUS]);
  if (status !== 207) expect(err!.data!.httpStatus, where).toBeLessThan(500);
}

/** Sends one body; answers whether it was refused (so nothing may have been written). */
async function check(route: Route, b: Body): Promise<boolean> {
  const res = await route.send(b);
  const text = await res.text();
  const sent = new TextDecoder().decode(b.bytes.subarray(0, 300));
  const where = `${route.label} <- ${b.what} (${b.contentType}, ${b.bytes.length} bytes: ${sent}): ${res.status} ${text.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`not JSON: ${where}`);
  }
  let refused = res.status >= 400;
  if (route.surface === "rest") {
    if (refused) {
      expect(typeof json.message, where).toBe("string");
      expect(CODES.has(json.error), where).toBe(true);
      expect(json.statusCode, where).toBe(res.status);
      expect(HTTP_STATUS[json.error as keyof typeof HTTP_STATUS], where).toBe(res.status);
    }
  } else if (route.surface === "graphql") {
    if (json.errors !== undefined) {
      expect(Array.isArray(json.errors) && json.errors.length > 0, where).toBe(true);
      for (const e of json.errors) expectErrorExtensions(e, where);
      refused = true;
    } else expect(res.status, where).toBe(200);
    if (res.status >= 400) expect(json.data ?? null, where).toBeNull();
  } else {
    const replies = Array.isArray(json) ? json : [json];
    for (const r of replies) {
      if (r.error !== undefined) {
        expectTrpcError(r, res.status, where);
        refused = true;
      } else expect(r.result, where).toBeDefined();
    }
  }
  if (b.refuse) expect(refused, `must be refused: ${where}`).toBe(true);
  return refused;
}

async function stillAnswers() {
  expect((await h.service.http.handle(new Request("http://localhost/healthz"))).status).toBe(200);
  const read = await h.api(ws, "GET", `/pipelines/${ids.pipeline}`);
  expect(read.status).toBe(200);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}

/** Sends each body to its route; a refused one must leave every table as it was. */
async function throwAt(route: Route, b: Body, before: { value: string }) {
  const refused = await check(route, b);
  const after = await snapshot();
  if (refused) expect(after === before.value, `${route.label} <- ${b.what}: refused, yet a table changed`).toBe(true);
  before.value = after;
}

beforeAll(async () => {
  h = await Harness.start({ startJobs: false, env: { MAX_JSON_BODY_BYTES: String(MAX_BODY) } });
  ws = await h.workspace({ name: "Owner" });
  const conn = await h.ok(ws, "POST", "/connections", { name: "Owner SFTP", type: "SFTP", useHostedSFTP: true });
  const schema = await h.ok(ws, "POST", "/schemas", { name: "Owner schema", definition: { type: "object", properties: { a: { type: "string" } } } });
  const webhook = await h.ok(ws, "POST", "/webhooks", { name: "Owner hook", url: "https://hooks.example.com/a" });
  const pipeline = await h.ok(ws, "POST", "/pipelines", { name: "Owner pipeline", clientId: conn.id, schemaId: schema.id, webhookIds: [webhook.id] });
  Object.assign(ids, { connection: conn.id, schema: schema.id, webhook: webhook.id, pipeline: pipeline.id });
  const doc = (await h.request("GET", "/openapi.json")).body as { components?: { schemas?: Record<string, unknown>; requestBodies?: Record<string, unknown> } };
  const names = new Set<string>();
  const walk = (s: unknown) => {
    if (!s || typeof s !== "object") return;
    const props = (s as { properties?: Record<string, unknown> }).properties;
    if (props) for (const k of Object.keys(props)) names.add(k);
    for (const v of Object.values(s)) walk(v);
  };
  walk(doc.components?.schemas);
  walk(doc.components?.requestBodies);
  vocabulary = [...names].sort();
  expect(vocabulary).toContain("fieldMappings");
});
afterAll(async () => {
  await pgSnapshot?.sql.end();
  await h.close();
});

/** Generated bodies per surface: a few seconds each on a shared 2-core machine (a Postgres round trip costs more per body). */
const RUNS = process.env.TEST_DATABASE_URL ? 300 : 600;

test("the snapshot sees a write", async () => {
  const before = await snapshot();
  await h.ok(ws, "POST", "/webhooks", { name: "Seen", url: "https://hooks.example.com/seen" });
  expect(await snapshot()).not.toBe(before);
});

for (const surface of ["rest", "graphql", "trpc"] as const) {
  const routesOf = () => (surface === "rest" ? restRoutes() : surface === "graphql" ? graphqlRoutes() : trpcRoutes());

  describe(`${surface}: every write route`, () => {
    test("the walk finds the write routes", () => {
      const labels = routesOf().map((r) => r.label);
      const expected = { rest: ["POST /pipelines", "PATCH /pipelines/:id", "POST /connections"], graphql: ["mutation createPipeline", "mutation updatePipeline"], trpc: ["pipelines.create", "pipelines.update"] }[surface];
      for (const l of expected) expect(labels).toContain(l);
    });

    test("each kind of hostile body, at each route", async () => {
      const before = { value: await snapshot() };
      // tRPC's batch and {id, data} forms are left to the generated bodies.
      for (const route of routesOf().filter((r) => r.surface !== "trpc" || !r.label.includes(" "))) {
        for (const b of fixedBodies(route.wrap)) await throwAt(route, b, before);
      }
      await stillAnswers();
    }, 60_000);

    test("generated bodies: no 5xx, the standard error body, nothing written when refused", async () => {
      const routes = routesOf();
      const before = { value: await snapshot() };
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: routes.length - 1 }).chain((i) => bodies(routes[i]!.wrap).map((b) => [routes[i]!, b] as const)),
          async ([route, b]) => {
            await throwAt(route, b, before);
          },
        ),
        { numRuns: RUNS },
      );
      await stillAnswers();
    }, 120_000);
  });
}
