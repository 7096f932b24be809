import { defineConfig } from "drizzle-kit";

/**
 * One schema folder per dialect (drizzle 0.45 cannot share table objects
 * between SQLite and Postgres). `npm run db:generate` runs drizzle-kit once
 * per dialect; DRIZZLE_DIALECT picks which.
 */
const dialect = process.env.DRIZZLE_DIALECT === "pg" ? "postgresql" : "sqlite";
const folder = dialect === "postgresql" ? "pg" : "sqlite";

export default defineConfig({
  dialect,
  schema: `./db/${folder}/schema/index.ts`,
  out: `./db/${folder}/migrations`,
  casing: undefined,
  strict: true,
});
