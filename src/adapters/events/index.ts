import type { Database } from "../../../db/client";
import type { Logger } from "../../logger";
import { createMemoryEventBus } from "./memory";
import type { EventBus } from "./port";
import { createPostgresEventBus } from "./postgres";

export type { EventBus, RunEvent, RunEventFilter } from "./port";

/**
 * The run-status event bus for this database: in process on SQLite (one
 * instance owns the file), LISTEN/NOTIFY on Postgres (any number of instances).
 * `bufferSize`: events kept per slow subscriber before the oldest are dropped.
 */
export async function createEventBus(opts: { db: Database; log: Logger; bufferSize?: number }): Promise<EventBus> {
  const { db, log, bufferSize } = opts;
  if (db.dialect === "pg") {
    if (!db.url) throw new Error("events: a Postgres database without its URL cannot LISTEN");
    return createPostgresEventBus({ url: db.url, log, bufferSize });
  }
  return createMemoryEventBus({ bufferSize });
}
