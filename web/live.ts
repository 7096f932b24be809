import { type QueryClient, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { trpc } from "./trpc";

/**
 * Follows every run of the workspace over the `runs.onUpdate` subscription
 * (server-sent events): each update refreshes the run's own page and the
 * run lists, without a reload.
 */
export function useLiveRuns(): "connecting" | "live" | "offline" {
  const qc = useQueryClient();
  const [state, setState] = useState<"connecting" | "live" | "offline">("connecting");
  useEffect(() => {
    const sub = trpc.runs.onUpdate.subscribe(undefined, {
      // What changed before the subscription was live (between a page's first fetch and now) is fetched again:
      // a run that completed in that gap would otherwise stay "processing" on the page.
      onStarted: () => {
        setState("live");
        catchUp(qc);
      },
      onData: (update) => apply(qc, update as never),
      onError: () => setState("offline"),
      onConnectionStateChange: (s) => {
        setState(s.state === "pending" ? "live" : s.state === "connecting" ? "connecting" : "offline");
        // Back after a reconnect: updates sent meanwhile were missed.
        if (s.state === "pending") catchUp(qc);
      },
    });
    return () => sub.unsubscribe();
  }, [qc]);
  return state;
}

function catchUp(qc: QueryClient): void {
  qc.invalidateQueries({ queryKey: ["runs"] });
  qc.invalidateQueries({ queryKey: ["run"] });
}

function apply(qc: QueryClient, update: { run: { id: string } | null }): void {
  if (update.run) qc.setQueryData(["run", update.run.id], update.run);
  qc.invalidateQueries({ queryKey: ["runs"] });
}

/** `metadata.progress` when the engine publishes it: a fraction, a percentage, or {done, total}. */
export function progressOf(metadata: Record<string, unknown>): number | null {
  const p = metadata.progress as unknown;
  if (typeof p === "number") return p > 1 ? p / 100 : p;
  if (p && typeof p === "object") {
    const { done, total } = p as { done?: number; total?: number };
    if (typeof done === "number" && typeof total === "number" && total > 0) return done / total;
  }
  return null;
}
