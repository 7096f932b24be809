import { z } from "zod";
import type { ErrorCode } from "../domain/errors";
import { LATEST_VERSION, VERSIONS } from "../domain/versions";
import { HTTP_STATUS } from "../transport/status";
import { type GuideDescriptions, readGuide } from "./openapi-guide";
import { NamedSchemas, override, schemaRefs } from "./openapi-schemas";

/**
 * The OpenAPI 3.1 document is built from the routes themselves: each route
 * declares, in its `detail`, the same zod shapes the services parse
 * (`describe()` below), and `buildDocument()` collects them. Named shapes
 * (`.meta({ id })`) become components: responses in zod's "output" form,
 * requests in its "input" form (a member with a default is optional), as
 * docs/decisions/openapi.md explains. The prose (what an operation does,
 * what a schema is) comes from the API guide (./openapi-guide.ts).
 */
type Shape = z.ZodType;
type Json = Record<string, unknown>;

const SCHEMAS = "#/components/schemas/";
const REQUEST_BODIES = "#/components/requestBodies/";

function idOf(shape: Shape): string {
  const id = z.globalRegistry.get(shape)?.id;
  if (!id) throw new Error("describe(): body and response shapes must be named with .meta({ id })");
  return id;
}
const ref = (shape: Shape) => ({ $ref: `${SCHEMAS}${idOf(shape)}` });

/** One named shape, a list of them, a page of them, or a schema written out (a file served as it is). */
export type ResponseDoc = { one: Shape } | { arrayOf: Shape } | { pageOf: Shape } | { json: Json; description: string };

/**
 * Errors a route raises beyond those every operation shares, each with when
 * it happens. Shared by all: 400 (an unknown Service-Version; bad query or
 * body members when the route takes them), 401, 410, 429; 413 and 415 when
 * the route takes a body; 404 when its path names an id (buildDocument()).
 */
export type RouteErrors = Partial<Record<ErrorCode, string>>;

export interface RouteDescription {
  summary: string;
  tags: string[];
  /** Only until the API guide describes the operation (docs/guide, ./openapi-guide.ts): the guide's text replaces it. */
  description?: string;
  /** A JSON body (named shape; described in its input form). */
  body?: Shape;
  /** The body may be left out (every member of `body` is optional). */
  bodyOptional?: true;
  /** A multipart/form-data body (named shape), read by the route itself. */
  form?: Shape;
  query?: z.ZodObject;
  response: ResponseDoc;
  errors?: RouteErrors;
  deprecated?: boolean;
}

function responseSchema(r: ResponseDoc): Json {
  if ("json" in r) return r.json;
  if ("one" in r) return ref(r.one);
  if ("arrayOf" in r) return { type: "array", items: ref(r.arrayOf) };
  return {
    type: "object",
    required: ["data", "pagination"],
    properties: { data: { type: "array", items: ref(r.pageOf) }, pagination: { $ref: `${SCHEMAS}Pagination` } },
  };
}

const errorContent = () => ({ "application/json": { schema: { $ref: `${SCHEMAS}Error` } } });
const errorResponse = (description: string) => ({ description, content: errorContent() });
const sentence = (parts: (string | undefined)[]) => parts.filter(Boolean).join("; ");

/** Responses every authenticated operation shares, as components. */
const SHARED_RESPONSES: Record<string, Json> = {
  Unauthorized: errorResponse("The `x-api-key` header is missing, unknown or revoked (`unauthorized`)."),
  Sunset: errorResponse(
    "The request is pinned to API version 2024-09-01 (by `Service-Version` or the workspace's default), or calls a `/clients` route, after that version's sunset (`api_version_sunset`); the body adds `migration_url`.",
  ),
  RateLimited: errorResponse("Too many requests for this key (`rate_limited`); wait before sending more."),
  Unexpected: errorResponse("An unexpected error (`internal`, 500): logged with a reference that the message repeats."),
};
const shared = (name: keyof typeof SHARED_RESPONSES) => ({ $ref: `#/components/responses/${name}` });

/** The operation's responses: 200, the errors every operation shares, and the route's own. */
function responses(d: RouteDescription): Record<string, Json> {
  const e = d.errors ?? {};
  const takesBody = Boolean(d.body || d.form);
  const out: Record<string, Json> = {
    200: { description: "json" in d.response ? d.response.description : "OK", content: { "application/json": { schema: responseSchema(d.response) } } },
    400: errorResponse(
      `Bad input; the message names the field: ${sentence([
        "an unknown `Service-Version` (`unsupported_version`)",
        d.query ? "a query parameter that breaks its rules (`invalid_input`)" : undefined,
        d.body ? "a body member missing, of the wrong type or breaking a rule, or malformed JSON (`invalid_input`)" : undefined,
        e.invalid_input,
        e.feature_not_enabled,
      ])}.`,
    ),
    401: shared("Unauthorized"),
  };
  if (e.forbidden) out[403] = errorResponse(`Not allowed for this key (\`forbidden\`): ${e.forbidden}.`);
  if (e.not_found) out[404] = errorResponse(`Not found in this workspace (\`not_found\`): ${e.not_found}.`);
  if (e.conflict) out[409] = errorResponse(`Conflict with the current state (\`conflict\`): ${e.conflict}.`);
  out[410] = shared("Sunset");
  if (takesBody || e.payload_too_large)
    out[413] = errorResponse(`Too large (\`payload_too_large\`): ${e.payload_too_large ?? "the JSON body is over MAX_JSON_BODY_BYTES"}.`);
  if (takesBody || e.unsupported_media_type)
    out[415] = errorResponse(
      `Wrong \`content-type\` (\`unsupported_media_type\`): ${e.unsupported_media_type ?? "send application/json"}.`,
    );
  out[429] = shared("RateLimited");
  out.default = shared("Unexpected");
  return out;
}

/** An OpenAPI operation object for an authenticated route's `detail`. Path parameters and their 404 are added by buildDocument(). */
export function describe(d: RouteDescription): Json {
  const parameters: Json[] = [];
  if (d.query) {
    // Named shapes inside a query land in $defs; buildDocument() points them at components (or inlines their input form).
    const converted = z.toJSONSchema(d.query, { io: "input", unrepresentable: "any", override }) as Json;
    // A named query shape converts to a reference to itself; its members are in its definition.
    const root = typeof converted.$ref === "string" ? (converted.$defs as Record<string, Json>)[converted.$ref.slice("#/$defs/".length)]! : converted;
    const js = JSON.parse(JSON.stringify(root).replaceAll('"#/$defs/', `"${SCHEMAS}`)) as Json;
    const props = (js.properties ?? {}) as Record<string, Json>;
    const required = (js.required ?? []) as string[];
    for (const [name, schema] of Object.entries(props)) {
      const { description, deprecated, ...rest } = schema;
      parameters.push({ name, in: "query", required: required.includes(name), schema: rest, description, deprecated });
    }
  }
  const op: Json = { summary: d.summary, tags: d.tags, parameters, responses: responses(d) };
  if (d.description) op.description = d.description;
  if (d.deprecated) op.deprecated = true;
  if (d.body) op.requestBody = { $ref: `${REQUEST_BODIES}${idOf(d.body)}` };
  if (d.body && d.bodyOptional) OPTIONAL_BODIES.add(idOf(d.body));
  if (d.form) op.requestBody = { required: true, content: { "multipart/form-data": { schema: ref(d.form) } } };
  return op;
}

const ERROR_SCHEMA: Json = {
  type: "object",
  required: ["message", "statusCode", "error"],
  properties: {
    message: { type: "string", description: "What went wrong; names the field for bad input." },
    statusCode: { type: "integer" },
    error: { type: "string", enum: Object.keys(HTTP_STATUS) },
    migration_url: { type: "string", description: "Only with error api_version_sunset." },
  },
};

/** Request bodies a route takes but does not require (RouteDescription.bodyOptional). */
const OPTIONAL_BODIES = new Set<string>();

export interface DocumentedRoute {
  method: string;
  path: string;
  detail?: Json;
}

/** A path that names an id answers 404 when the id is nobody's, or another workspace's. */
function withPathErrors(responses: Record<string, Json>, idParams: string[]): Record<string, Json> {
  if (idParams.length === 0) return responses;
  const named = `${idParams.map((p) => `\`${p}\``).join(" or ")} in the path names nothing of this workspace`;
  const existing = responses[404]?.description as string | undefined;
  const description = existing
    ? existing.replace("(`not_found`): ", `(\`not_found\`): ${named}; `)
    : `Not found in this workspace (\`not_found\`): ${named}.`;
  // Status codes are integer-like keys: objects list them in ascending order whatever the order of insertion.
  return { ...responses, 404: { description, content: errorContent() } };
}

export function buildDocument(routes: DocumentedRoute[], info: { publicUrl: string; version: string }, guide: GuideDescriptions = readGuide()): Json {
  const named = new NamedSchemas();
  const paths: Record<string, Record<string, Json>> = {};
  const bodies = new Set<string>();
  for (const r of routes) {
    if (!r.detail || !("responses" in r.detail)) continue;
    const path = r.path.replace(/:([^/]+)/g, "{$1}");
    const params = [...r.path.matchAll(/:([^/]+)/g)].map((m) => m[1]!);
    const pathParams = params.map((name) => ({ name, in: "path", required: true, schema: { type: "string" } }));
    const existing = named.forRequest((r.detail.parameters as Json[] | undefined) ?? []) as Json[];
    const body = (r.detail.requestBody as { $ref?: string } | undefined)?.$ref;
    if (body?.startsWith(REQUEST_BODIES)) bodies.add(body.slice(REQUEST_BODIES.length));
    paths[path] ??= {};
    const described = guide.operations.get(`${r.method.toUpperCase()} ${path}`);
    paths[path][r.method.toLowerCase()] = {
      ...r.detail,
      ...(described ? { description: described.text } : {}),
      operationId: `${r.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`,
      parameters: [...pathParams, { $ref: "#/components/parameters/ServiceVersion" }, ...existing],
      responses: withPathErrors(r.detail.responses as Record<string, Json>, params.filter((p) => /id$/i.test(p))),
    };
  }
  const requestBodies: Record<string, Json> = {};
  for (const id of [...bodies].sort()) requestBodies[id] = { required: !OPTIONAL_BODIES.has(id), content: { "application/json": { schema: named.request(id) } } };

  // Only the shapes the document uses: those it names, and those they name in turn.
  const all: Record<string, Json> = { ...named.outputs, Error: ERROR_SCHEMA };
  const used = schemaRefs([paths, requestBodies, SHARED_RESPONSES]);
  for (const pending = [...used]; pending.length > 0; ) {
    for (const id of schemaRefs(all[pending.pop()!])) if (!used.has(id)) used.add(id), pending.push(id);
  }
  const schemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(all)) {
    const described = guide.schemas.get(id);
    if (used.has(id)) schemas[id] = described ? { ...schema, description: described.text } : schema;
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
      schemas,
      requestBodies,
      responses: SHARED_RESPONSES,
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
