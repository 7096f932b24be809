import type { RunStatus } from "../../domain/runs";

/** A run changed status. Published after the change is committed. */
export interface RunEvent {
  type: "run.updated";
  /** Unique per event (evt_...). */
  id: string;
  workspaceId: string;
  runId: string;
  pipelineId: string;
  status: RunStatus;
  previousStatus: RunStatus | null;
  at: string;
  /**
   * Set only on delivery: how many earlier events this subscriber lost
   * because it read too slowly (its buffer keeps the newest events).
   */
  missed?: number;
}

export interface RunEventFilter {
  workspaceId: string;
  runId?: string;
  pipelineId?: string;
}

/**
 * Run-status events, in process and (on Postgres) across processes through
 * LISTEN/NOTIFY. A subscriber sees only its own workspace's events.
 */
export interface EventBus {
  publish(event: RunEvent): Promise<void>;
  /** Events matching the filter until the signal aborts or `return()` is called. */
  subscribe(filter: RunEventFilter, signal?: AbortSignal): AsyncIterableIterator<RunEvent>;
  /**
   * Tells the other instances on this database that `topic` changed (caches
   * drop what they hold: src/services/keys/cache.ts). Best effort and
   * without a payload; this instance is not told, its caller acts at once.
   * On Postgres a NOTIFY on the bus's own connection.
   */
  signal?(topic: string): Promise<void>;
  /**
   * Calls `fn` when another instance signals `topic`, and after the bus
   * reconnected (signals may have been missed meanwhile). Answers the
   * unsubscribe function.
   */
  onSignal?(topic: string, fn: () => void): () => void;
  close(): Promise<void>;
}
