import type { Server, ServerWebSocket, WebSocketHandler } from "bun";
import { type ExecutionArgs, GraphQLError } from "graphql";
import { handleProtocols, makeHandler } from "graphql-ws/use/bun";
import { isAppError } from "../src/domain/errors";
import { LATEST_VERSION, parseVersion } from "../src/domain/versions";
import { admitUnversioned, type HttpOptions, rememberServer } from "../src/transport/admission";
import { HTTP_STATUS } from "../src/transport/status";
import type { ServiceContext } from "../src/services/context";
import { authenticate } from "../src/services/keys/authenticate";
import type { GqlContext } from "./builder";
import { extensionsOf } from "./errors";
import { createYogaServer } from "./yoga";

/** What a socket carries from its upgrade: the key from the upgrade's header, if any, then the one it connected with. */
export interface GraphqlSocketData {
  apiKey: string | null;
}

type Fetch = (request: Request, server: Server<GraphqlSocketData>) => Response | undefined | Promise<Response | undefined>;

const refusal = (status: number, message: string, extensions: Record<string, unknown>) =>
  Response.json({ errors: [{ message, extensions }] }, { status, headers: { "service-version": LATEST_VERSION } });

const appErrorsOf = (e: unknown): readonly GraphQLError[] => {
  if (!isAppError(e)) throw e;
  return [new GraphQLError(e.message, { extensions: extensionsOf(e) })];
};

/**
 * graphql-ws (protocol `graphql-transport-ws`) on /graphql, next to HTTP on
 * the same path. Operations run through the same Yoga set-up as HTTP, so
 * errors are masked and coded the same way.
 *
 * The key: `x-api-key` (or `apiKey`) in connection_init's payload (what
 * browsers can send), else the upgrade request's `x-api-key` header. A bad key in the
 * header refuses the upgrade with 401 like any /graphql request; a missing
 * or bad key at connection_init closes the socket with 4403 (graphql-ws's
 * refusal). The key is checked again for every operation, so a key revoked
 * since the connection opened starts nothing more.
 */
export function createGraphqlWebSocket(svc: ServiceContext, http: HttpOptions) {
  const yoga = createYogaServer(svc);
  const data = (socket: ServerWebSocket<unknown>) => socket.data as GraphqlSocketData;

  const handler = makeHandler<Record<string, unknown> | undefined>({
    execute: (args: ExecutionArgs) => (args.rootValue as { execute: (a: ExecutionArgs) => never }).execute(args),
    subscribe: (args: ExecutionArgs) => (args.rootValue as { subscribe: (a: ExecutionArgs) => never }).subscribe(args),
    onConnect: async (ctx) => {
      // The header's own name, or `apiKey` as tRPC clients often send it.
      const sent = ctx.connectionParams?.["x-api-key"] ?? ctx.connectionParams?.apiKey;
      const socket = data(ctx.extra.socket);
      const apiKey = typeof sent === "string" ? sent : socket.apiKey;
      if (!apiKey) return false;
      try {
        await authenticate(svc, { apiKey });
      } catch (e) {
        if (isAppError(e)) return false;
        throw e;
      }
      socket.apiKey = apiKey;
      return true;
    },
    onSubscribe: async (ctx, _id, params) => {
      let gqlContext: GqlContext;
      try {
        gqlContext = {
          svc,
          actor: await authenticate(svc, { apiKey: data(ctx.extra.socket).apiKey, origin: { surface: "graphql", address: null, requestId: null } }),
        };
      } catch (e) {
        return appErrorsOf(e);
      }
      const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped(gqlContext);
      let document: ReturnType<typeof parse>;
      try {
        document = parse(params.query);
      } catch (e) {
        if (e instanceof GraphQLError) return [e];
        throw e;
      }
      const errors = validate(schema, document);
      if (errors.length > 0) return errors;
      return {
        schema,
        document,
        operationName: params.operationName,
        variableValues: params.variables,
        contextValue: await contextFactory(),
        rootValue: { execute, subscribe },
      };
    },
  }) as WebSocketHandler<GraphqlSocketData>;

  /** Answers a WebSocket upgrade of /graphql; undefined when upgraded. */
  async function upgrade(request: Request, server: Server<GraphqlSocketData>): Promise<Response | undefined> {
    const protocol = handleProtocols(request.headers.get("sec-websocket-protocol") ?? "");
    if (!protocol) {
      return refusal(400, "WebSocket subprotocol: send 'graphql-transport-ws' (graphql-ws)", {
        code: "BAD_REQUEST",
        error: "invalid_input",
        statusCode: 400,
      });
    }
    const apiKey = request.headers.get("x-api-key");
    try {
      if (apiKey !== null) await admitUnversioned(svc, request, http, "graphql");
      else {
        const version = request.headers.get("service-version");
        if (version !== null) parseVersion(version.trim());
      }
    } catch (e) {
      if (!isAppError(e)) throw e;
      return refusal(HTTP_STATUS[e.code], e.message, extensionsOf(e));
    }
    const upgraded = server.upgrade(request, {
      data: { apiKey } satisfies GraphqlSocketData,
      headers: { "sec-websocket-protocol": protocol, "service-version": LATEST_VERSION },
    });
    return upgraded ? undefined : refusal(400, "expected a WebSocket upgrade", { code: "BAD_REQUEST", error: "invalid_input", statusCode: 400 });
  }

  return {
    /** Bun.serve's `fetch` and `websocket`: WebSocket upgrades of /graphql here, every other request to `next`. */
    serve(next: (request: Request) => Response | Promise<Response>): { fetch: Fetch; websocket: WebSocketHandler<GraphqlSocketData> } {
      const fetch: Fetch = (request, server) => {
        rememberServer(request, server);
        const isUpgrade = request.headers.get("upgrade")?.toLowerCase() === "websocket";
        if (isUpgrade && new URL(request.url).pathname === "/graphql") return upgrade(request, server);
        // A subscription over SSE (GraphQL or tRPC) is quiet between updates; Bun.serve would close it after
        // its idle timeout (10 s). Both send a keep-alive so that proxies keep it open too (docs/decisions/live-status.md).
        if (request.headers.get("accept")?.includes("text/event-stream")) server.timeout(request, 0);
        return next(request);
      };
      return { fetch, websocket: handler };
    },
  };
}
