import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * postgres.js 3.4.9 as this service runs it: patched at install time by
 * patch-package (`patches/postgres+3.4.9.patch`, applied by `npm install`'s
 * postinstall), for four defects in `src/connection.js` and `src/index.js` found by resetting
 * connections through a proxy (docs/reliability.md, "Database outages"):
 *
 * - A close that follows a socket error failed none of the queries still
 *   pending, so a query sent between the socket's `error` and its `close`
 *   (Bun emits the close a little later) waited for ever: an upload request
 *   hung until its client gave up.
 * - A close or end with a write still scheduled cleared the timer but left it
 *   set, so the connection, reused later, never wrote again: its next query
 *   (or its start-up message) waited for ever.
 * - A query handed to a connection whose socket had closed (a transaction's
 *   `rollback` after its statement failed) was written to no socket: a
 *   TypeError on a later turn that ended the process.
 * - Queries waiting for a connection while none could be opened were failed
 *   one per further attempt (each a connect timeout): during a stall of a
 *   minute, uploads waited up to 50 s for their 503. Now a connection that
 *   fails to open fails them all.
 *
 * `checkPatchedPostgres` refuses to start on an unpatched copy (installed
 * with `--ignore-scripts`, or a changed version), rather than run with them.
 */
const MARKERS = ["fps: a cleared timer left set", "fps: also after an error", "fps: a connection whose socket has closed"];
/** In src/index.js (the pool). */
const POOL_MARKERS = ["fps: a connection that failed to open fails the queries waiting for one"];

export function checkPatchedPostgres(dir = dirname(fileURLToPath(import.meta.resolve("postgres")))): void {
  const source = readFileSync(join(dir, "connection.js"), "utf8");
  const pool = readFileSync(join(dir, "index.js"), "utf8");
  const missing = [...MARKERS.filter((m) => !source.includes(m)), ...POOL_MARKERS.filter((m) => !pool.includes(m))];
  if (missing.length > 0) {
    throw new Error(
      `postgres.js at ${dir} lacks this service's fixes (patches/postgres+3.4.9.patch): run npm install, whose postinstall applies them (not --ignore-scripts)`,
    );
  }
}
