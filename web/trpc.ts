import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, TRPCClientError } from "@trpc/client";
import type { AppRouter } from "../trpc/router";

/**
 * The dashboard's one tRPC client: queries and mutations over HTTP (batched),
 * `runs.onUpdate` over server-sent events. The session cookie goes with
 * every request (same origin); the browser adds the Origin that the
 * service checks on mutations.
 */
export const trpc = createTRPCClient<AppRouter>({
  links: [
    splitLink({
      condition: (op) => op.type === "subscription",
      true: httpSubscriptionLink({ url: "/trpc" }),
      // Calls made in the same tick go as one request (the first load: the session and the first page of runs).
      false: httpBatchLink({ url: "/trpc" }),
    }),
  ],
});

/** The service's error code (`unauthorized`, `not_found`, ...) of a failed call, if it has one. */
export function errorCode(e: unknown): string | null {
  if (e instanceof TRPCClientError) return (e.data as { error?: string } | undefined)?.error ?? null;
  return null;
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
