import { createCallerFactory, router } from "./init";
import { arrivalsRouter } from "./routers/arrivals";
import { auditRouter } from "./routers/audit";
import { connectionsRouter } from "./routers/connections";
import { documentsRouter } from "./routers/documents";
import { filesRouter } from "./routers/files";
import { pipelinesRouter } from "./routers/pipelines";
import { runsRouter } from "./routers/runs";
import { outboundRouter } from "./routers/outbound";
import { schemasRouter } from "./routers/schemas";
import { webhooksRouter } from "./routers/webhooks";
import { accountRouter } from "./routers/account";
import { keysRouter } from "./routers/keys";
import { membersRouter } from "./routers/members";
import { workspaceRouter } from "./routers/workspace";
import { notificationPreferencesRouter, notificationSendsRouter } from "./routers/notifications";

export const appRouter = router({
  connections: connectionsRouter,
  schemas: schemasRouter,
  pipelines: pipelinesRouter,
  webhooks: webhooksRouter,
  runs: runsRouter,
  files: filesRouter,
  arrivals: arrivalsRouter,
  documents: documentsRouter,
  outbound: outboundRouter,
  notificationPreferences: notificationPreferencesRouter,
  notificationSends: notificationSendsRouter,
  auditEvents: auditRouter,
  account: accountRouter,
  members: membersRouter,
  keys: keysRouter,
  workspace: workspaceRouter,
});

/** Import this type in a client: `createTRPCClient<AppRouter>(...)`. */
export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
