import { timestamp } from "drizzle-orm/pg-core";

export const time = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

export const timestamps = {
  createdAt: time("created_at").notNull(),
  updatedAt: time("updated_at").notNull(),
};
