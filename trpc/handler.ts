import { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { isAppError } from "../src/domain/errors";
import { LATEST_VERSION, parseVersion } from "../src/domain/versions";
import type { ServiceContext } from "../src/services/context";
import { authenticate } from "../src/services/keys/authenticate";
import { TRPC_CODE } from "./errors";
import { appRouter } from "./router";

/**
 * tRPC over the fetch adapter at /trpc, authenticated by the same
 * `x-api-key`. tRPC is unversioned: it always serves the latest shapes.
 */
export function createTrpcHandler(svc: ServiceContext) {
  return async (req: Request): Promise<Response> => {
    const res = await fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router: appRouter,
      createContext: async () => {
        try {
          const raw = req.headers.get("service-version");
          if (raw !== null) parseVersion(raw.trim());
          return { svc, actor: await authenticate(svc, { apiKey: req.headers.get("x-api-key") }) };
        } catch (e) {
          if (isAppError(e)) throw new TRPCError({ code: TRPC_CODE[e.code], message: e.message, cause: e });
          throw e;
        }
      },
    });
    res.headers.set("service-version", LATEST_VERSION);
    return res;
  };
}
