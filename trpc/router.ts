import { createCallerFactory, router } from "./init";
import { connectionsRouter } from "./routers/connections";
import { pipelinesRouter } from "./routers/pipelines";
import { schemasRouter } from "./routers/schemas";
import { webhooksRouter } from "./routers/webhooks";

export const appRouter = router({
  connections: connectionsRouter,
  schemas: schemasRouter,
  pipelines: pipelinesRouter,
  webhooks: webhooksRouter,
});

/** Import this type in a client: `createTRPCClient<AppRouter>(...)`. */
export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
