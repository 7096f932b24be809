import { createTRPCClient, httpLink } from "@trpc/client";
import type { AppRouter } from "../../trpc/router";
import type { Harness, TestWorkspace } from "./harness";

/** The official tRPC client with the workspace's key, over the service's own HTTP handler (no socket). */
export function trpcClient(h: Harness, ws: TestWorkspace) {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: "http://localhost/trpc",
        headers: { "x-api-key": ws.apiKey },
        fetch: (url, init) => h.service.http.handle(new Request(url, init as RequestInit)),
      }),
    ],
  });
}
