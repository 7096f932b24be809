import { z } from "zod";
import { HTTP_STATUS } from "./errors";
import { LATEST_VERSION, VERSIONS } from "../domain/versions";

/**
 * The OpenAPI 3.1 document is built from the routes themselves: each route
 * declares, in its `detail`, the same zod shapes the services parse
 * (`describe()` below), and `buildDocument()` collects them. Named shapes
 * (`.meta({ id })`) become components.
 */
type Shape = z.ZodType;
type Json = Record<string, unknown>;

const override = (ctx: { zodSchema: z.core.$ZodType; jsonSchema: Json }) => {
  if (ctx.zodSchema._zod.def.type === "date") {
    ctx.jsonSchema.type = "string";
    ctx.jsonSchema.format = "date-time";
  }
};

function idOf(shape: Shape): string {
  const id = z.globalRegistry.get(shape)?.id;
  if (!id) throw new Error("describe(): body and response shapes must be named with .meta({ id })");
  return id;
}
const ref = (shape: Shape) => ({ $ref: `#/components/schemas/${idOf(shape)}` });

export type ResponseDoc = { one: Shape } | { arrayOf: Shape } | { pageOf: Shape };

export interface RouteDescription {
  summary: string;
  tags: string[];
  description?: string;
  body?: Shape;
  query?: z.ZodObject;
  response: ResponseDoc;
  deprecated?: boolean;
}

function responseSchema(r: ResponseDoc): Json {
  if ("one" in r) return ref(r.one);
  if ("arrayOf" in r) return { type: "array", items: ref(r.arrayOf) };
  return {
    type: "object",
    required: ["data", "pagination"],
    properties: { data: { type: "array", items: ref(r.pageOf) }, pagination: { $ref: "#/components/schemas/Pagination" } },
  };
}

/** An OpenAPI operation object for a route's `detail`. Path parameters are added by buildDocument(). */
export function describe(d: RouteDescription): Json {
  const parameters: Json[] = [];
  if (d.query) {
    // Named shapes inside a query land in $defs; they are components of the document already.
    const converted = z.toJSONSchema(d.query, { io: "input", unrepresentable: "any", override }) as Json;
    const js = JSON.parse(JSON.stringify(converted).replaceAll('"#/$defs/', '"#/components/schemas/')) as Json;
    const props = (js.properties ?? {}) as Record<string, Json>;
    const required = (js.required ?? []) as string[];
    for (const [name, schema] of Object.entries(props)) {
      const { description, deprecated, ...rest } = schema;
      parameters.push({ name, in: "query", required: required.includes(name), schema: rest, description, deprecated });
    }
  }
  const op: Json = {
    summary: d.summary,
    tags: d.tags,
    parameters,
    responses: {
      200: { description: "OK", content: { "application/json": { schema: responseSchema(d.response) } } },
      default: { description: "Error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
    },
  };
  if (d.description) op.description = d.description;
  if (d.deprecated) op.deprecated = true;
  if (d.body) op.requestBody = { required: true, content: { "application/json": { schema: ref(d.body) } } };
  return op;
}

function components(): Record<string, Json> {
  const opts = { uri: (id: string) => `#/components/schemas/${id}`, unrepresentable: "any", override } as const;
  const outputs = (z.toJSONSchema(z.globalRegistry, { ...opts, io: "output" }) as { schemas: Record<string, Json> }).schemas;
  const inputs = (z.toJSONSchema(z.globalRegistry, { ...opts, io: "input" }) as { schemas: Record<string, Json> }).schemas;
  const out: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(outputs)) {
    const { $schema, $id, ...rest } = id.endsWith("Input") ? (inputs[id] ?? schema) : schema;
    out[id] = rest;
  }
  out.Error = {
    type: "object",
    required: ["message", "statusCode", "error"],
    properties: {
      message: { type: "string", description: "What went wrong; names the field for bad input." },
      statusCode: { type: "integer" },
      error: { type: "string", enum: Object.keys(HTTP_STATUS) },
      migration_url: { type: "string", description: "Only with error api_version_sunset." },
    },
  };
  return out;
}

export interface DocumentedRoute {
  method: string;
  path: string;
  detail?: Json;
}

export function buildDocument(routes: DocumentedRoute[], info: { publicUrl: string; version: string }): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    if (!r.detail || !("responses" in r.detail)) continue;
    const path = r.path.replace(/:([^/]+)/g, "{$1}");
    const pathParams = [...r.path.matchAll(/:([^/]+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    const existing = (r.detail.parameters as Json[] | undefined) ?? [];
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = {
      ...r.detail,
      operationId: `${r.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`,
      parameters: [...pathParams, { $ref: "#/components/parameters/ServiceVersion" }, ...existing],
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "File Pipeline Service",
      version: info.version,
      description:
        "Receive partner files over SFTP, e-mail or the upload API; map and validate every row against a JSON Schema; hand the results on. " +
        "Every request carries `x-api-key`. GraphQL is served at /graphql and tRPC at /trpc over the same services.",
    },
    servers: [{ url: info.publicUrl }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      schemas: components(),
      securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
      parameters: {
        ServiceVersion: {
          name: "Service-Version",
          in: "header",
          required: false,
          description: `API version. Absent: the workspace default, else 2024-09-01. Latest: ${LATEST_VERSION}.`,
          schema: { type: "string", enum: [...VERSIONS] },
        },
      },
    },
  };
}

export function docsPage(specUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>File Pipeline Service API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.onload = () => { window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: "#swagger-ui" }); };
  </script>
</body>
</html>`;
}
