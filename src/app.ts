import { createGraphqlHandler } from "../graphql/yoga";
import { createTrpcHandler } from "../trpc/handler";
import { createServiceContext, type ServiceOptions } from "./context";
import { createHttpApp } from "./http/app";
import pkg from "../package.json" with { type: "json" };

/** The composition root: REST, GraphQL and tRPC mounted over the same services. */
export async function createService(opts: ServiceOptions) {
  const { config } = opts;
  const svc = await createServiceContext(opts);
  const db = svc.db;
  const http = createHttpApp(
    svc,
    { graphql: createGraphqlHandler(svc, config), trpc: createTrpcHandler(svc, config) },
    { maxJsonBodyBytes: config.maxJsonBodyBytes, version: pkg.version },
  );
  return {
    svc,
    http,
    async close() {
      await db.close();
    },
  };
}

export type { ServiceOptions };
export type Service = Awaited<ReturnType<typeof createService>>;
