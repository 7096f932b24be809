/**
 * A process of its own for test/faults.database.test.ts (bun test counts any
 * unhandled rejection as a failure, whoever handles it): a postgres.js client
 * whose first connection the proxy resets during the array-type query.
 * `bun test/helpers/pg-type-fetch-child.ts <url> [guard|bare]`: prints the
 * two queries' outcomes as JSON and exits 0 if the process survived.
 */
import postgres from "postgres";
import { guardTypeFetch } from "../../db/pg-type-fetch";

const [url, mode = "guard"] = process.argv.slice(2);
const sql = postgres(url!, { max: 1, connect_timeout: 5, onnotice: () => {} });
if (mode === "guard") guardTypeFetch(sql);
const outcome = (p: Promise<unknown>) => p.then(() => "answered", (e: Error & { code?: string }) => e.code ?? e.message);
const first = await outcome(sql`select 1`);
// The dropped rejection has its turn here; without the guard the process ends before the next line.
await Bun.sleep(200);
const second = await outcome(sql`select 2`);
await sql.end({ timeout: 5 });
console.log(JSON.stringify({ first, second }));
