import type { Database } from "../../../db/client";
import type { Logger } from "../../logger";
import type { EventBus } from "./port";

// PENDING(events helper): replaced by the in-process and Postgres LISTEN/NOTIFY buses.
export async function createEventBus(_opts: { db: Database; log: Logger }): Promise<EventBus> {
  return {
    publish: async () => {},
    subscribe: () => {
      throw new Error("events: implementation pending");
    },
    close: async () => {},
  };
}
