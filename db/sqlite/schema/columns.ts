import { integer } from "drizzle-orm/sqlite-core";

export const time = (name: string) => integer(name, { mode: "timestamp_ms" });

export const timestamps = {
  createdAt: time("created_at").notNull(),
  updatedAt: time("updated_at").notNull(),
};
