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
  close(): Promise<void>;
}
