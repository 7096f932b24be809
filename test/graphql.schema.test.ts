import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildClientSchema, buildSchema, getIntrospectionQuery, type IntrospectionQuery, lexicographicSortSchema, printSchema } from "graphql";
import { printedSchema } from "../graphql/schema";
import { Harness } from "./helpers/harness";

/** The printed GraphQL schema is committed; this fails when the code-first schema drifts from it. */

const COMMITTED_PATH = join(import.meta.dir, "..", "graphql", "schema.graphql");
const STALE = "graphql/schema.graphql is out of date: run `npm run graphql:print` and commit the result";

let h: Harness;

beforeAll(async () => {
  h = await Harness.start();
});

afterAll(async () => {
  await h.close();
});

const committed = () => readFileSync(COMMITTED_PATH, "utf8");

/** The first line where the two texts differ, so a failure shows what drifted. */
function firstDifference(a: string, b: string): string {
  const x = a.split("\n");
  const y = b.split("\n");
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}: committed ${JSON.stringify(y[i])}, code ${JSON.stringify(x[i])}`;
  }
  return "no difference";
}

test("the schema built from the code equals the committed graphql/schema.graphql", () => {
  const printed = `${printedSchema()}\n`;
  const text = committed();
  expect(printed === text, `${STALE} (${firstDifference(printed, text)})`).toBe(true);
});

test("the schema /graphql serves is the committed one", async () => {
  const ws = await h.workspace();
  const r = await h.graphql<IntrospectionQuery>(ws.apiKey, getIntrospectionQuery({ specifiedByUrl: true, inputValueDeprecation: true }));
  expect(r.body.errors).toBeUndefined();
  const served = printSchema(lexicographicSortSchema(buildClientSchema(r.body.data as IntrospectionQuery)));
  const fromFile = printSchema(lexicographicSortSchema(buildSchema(committed())));
  expect(served === fromFile, `${STALE} (${firstDifference(served, fromFile)})`).toBe(true);
});

test("the committed schema exposes the four resources and no stored credential", () => {
  const schema = buildSchema(committed());
  const query = Object.keys(schema.getQueryType()?.getFields() ?? {});
  const mutation = Object.keys(schema.getMutationType()?.getFields() ?? {});
  for (const r of ["connection", "schema", "pipeline", "webhook"]) {
    expect(query).toContain(r);
    expect(query).toContain(`${r}s`);
    const type = `${r[0]!.toUpperCase()}${r.slice(1)}`;
    for (const verb of ["create", "update", "delete"]) expect(mutation).toContain(`${verb}${type}`);
  }
  expect(mutation).toContain("testConnection");
  const connection = schema.getType("Connection");
  const fields = connection && "getFields" in connection ? Object.keys(connection.getFields()) : [];
  expect(fields).toContain("credentialsSet");
  for (const secret of ["sftpPassword", "sftpPrivateKey", "sftpPassphrase", "awsPassword"]) expect(fields).not.toContain(secret);
});
