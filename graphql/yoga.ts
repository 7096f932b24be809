import { type ASTNode, type ASTVisitor, GraphQLError, type ValidationContext } from "graphql";
import { createYoga, type GraphQLParams, type Plugin } from "graphql-yoga";
import { isAppError, UNAVAILABLE_RETRY_AFTER_SECONDS } from "../src/domain/errors";
import { currentRequestId } from "../src/domain/request-context";
import { asUnavailable } from "../src/services/shared/unavailable";
import { LATEST_VERSION } from "../src/domain/versions";
import { isStorableString } from "../src/transport/body";
import { admitUnversionedParsed, type HttpOptions, type LimitHeaders, limitHeadersOf } from "../src/transport/admission";
import { HTTP_STATUS } from "../src/transport/status";
import type { ServiceContext } from "../src/services/context";
import type { GqlContext } from "./builder";
import { extensionsOf, GRAPHQL_CODE, maskError } from "./errors";
import { schema } from "./schema";

/** The one Yoga set-up, for HTTP (and SSE) here and for graphql-ws in ws.ts. */
export function createYogaServer(svc: ServiceContext) {
  return createYoga<GqlContext>({
    schema,
    graphqlEndpoint: "/graphql",
    graphiql: false,
    landingPage: false,
    logging: false,
    maskedErrors: { maskError: maskError(svc.log) },
    // The handler below reads and limits the body itself (MAX_JSON_BODY_BYTES) before Yoga sees the request.
    maxRequestBodySize: false,
    plugins: [parsedBody, refuseWhatBodiesRefuse],
  });
}

/** Where the handler leaves the body it read and checked, in the server context Yoga passes to its hooks. */
const BODY = Symbol("checked body");
type WithBody = GqlContext & { [BODY]?: { value: unknown } };

/**
 * The body the handler read and checked is Yoga's parameters as they are:
 * Yoga neither reads the request again (a limit stream, a second JSON.parse)
 * nor needs a new request built around a re-serialised body. Yoga still
 * checks the parameters' shape (query, variables, operationName, batching).
 */
const parsedBody: Plugin = {
  onRequestParse({ serverContext, setRequestParser }) {
    const body = (serverContext as unknown as WithBody | undefined)?.[BODY];
    // Checked JSON of any shape: Yoga checks that it is parameters (or a batch of them) itself, as for a body it reads.
    if (body) setRequestParser(() => body.value as GraphQLParams | GraphQLParams[]);
  },
};

/**
 * Literals written into the document itself are checked as a JSON body's
 * values are (src/transport/body.ts): no NUL or unpaired surrogate in a string,
 * no `__proto__` member in an object. Variables arrive in the body and were
 * checked with it. A document that fails validation is refused like a body
 * REST refuses: 400, `invalid_input`, whatever the Accept header (Yoga
 * would answer 200 to application/json).
 */
const refuseWhatBodiesRefuse: Plugin = {
  onValidate({ addValidationRule }) {
    addValidationRule((ctx: ValidationContext): ASTVisitor => {
      const refuse = (message: string, node: ASTNode) =>
        ctx.reportError(new GraphQLError(message, { nodes: node, extensions: { code: GRAPHQL_CODE.invalid_input } }));
      return {
        StringValue(node) {
          if (!isStorableString(node.value)) refuse("a string contains a NUL character or an unpaired surrogate, which cannot be stored", node);
        },
        ObjectField(node) {
          if (node.name.value === "__proto__") refuse("a member named '__proto__' is not accepted", node);
        },
      };
    });
    return ({ valid, result }) => {
      if (valid) return;
      for (const error of result) {
        const ext = error.extensions as Record<string, unknown>;
        ext.code ??= "GRAPHQL_VALIDATION_FAILED";
        ext.error = "invalid_input";
        ext.statusCode = HTTP_STATUS.invalid_input;
        ext.requestId = currentRequestId();
        ext.http = { ...(ext.http as object), spec: false, status: HTTP_STATUS.invalid_input };
      }
    };
  },
};

/**
 * GraphQL at /graphql, authenticated by the same `x-api-key` before Yoga
 * sees the request; only then is the body read, with the same size limit
 * as REST. GraphQL is unversioned: it always serves the latest shapes.
 * Subscriptions answer as server-sent events when the request accepts
 * `text/event-stream`.
 */
export function createGraphqlHandler(svc: ServiceContext, opts: HttpOptions) {
  const yoga = createYogaServer(svc);
  return async (request: Request): Promise<Response> => {
    let ctx: GqlContext;
    let limits: LimitHeaders | null;
    try {
      const admitted = await admitUnversionedParsed(svc, request, opts);
      const withBody: WithBody = { svc, actor: admitted.actor };
      if (admitted.body) withBody[BODY] = admitted.body;
      ctx = withBody;
      limits = admitted.limits;
    } catch (raw) {
      const e = isAppError(raw) ? raw : asUnavailable(raw);
      if (!e) throw raw;
      const headers: Record<string, string> = { "service-version": LATEST_VERSION, ...limitHeadersOf(e) };
      if (e.code === "unavailable") headers["retry-after"] = String(UNAVAILABLE_RETRY_AFTER_SECONDS);
      return Response.json({ errors: [{ message: e.message, extensions: extensionsOf(e) }] }, { status: HTTP_STATUS[e.code], headers });
    }
    const res = await yoga.fetch(request, ctx);
    res.headers.set("service-version", LATEST_VERSION);
    if (limits) for (const name in limits) res.headers.set(name, limits[name] as string);
    return res;
  };
}
