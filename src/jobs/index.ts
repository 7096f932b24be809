import type { Database } from "../../db/client";
import type { Clock } from "../domain/clock";
import type { Logger } from "../logger";
import type { JobQueue } from "./port";

export interface QueueOptions {
  db: Database;
  log: Logger;
  clock: Clock;
  concurrency: number;
}

// PENDING(jobs helper): replaced by the SQLite and Postgres queues.
export async function createJobQueue(_opts: QueueOptions): Promise<JobQueue> {
  const pending = () => Promise.reject(new Error("jobs: implementation pending"));
  return { kind: "sqlite", enqueue: pending, add: pending, start: async () => {}, stop: async () => {} };
}
