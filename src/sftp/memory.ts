/**
 * Keeps the server's resident memory bounded during large transfers.
 *
 * Every SFTP request arrives in (and every answer leaves through) freshly
 * allocated buffers: ssh2 decrypts each packet into a new one and joins
 * packets that span two channel messages into another. A 1 GiB upload thus
 * leaves well over a GiB of short-lived garbage, and Bun's collector, left
 * to itself, let RSS climb ~250 MiB above the service's baseline before a
 * full collection (eden collections and `Bun.gc(false)` did not bring it
 * down; measured in docs/decisions/sftp.md). So the server watches its own
 * RSS as bytes move: every CHECK_EVERY_BYTES it reads it, and when it has
 * grown more than GROWTH_LIMIT_BYTES since the last collection it runs a
 * full one. Small transfers never trigger it.
 */
const CHECK_EVERY_BYTES = 8 * 1024 * 1024;
const GROWTH_LIMIT_BYTES = 64 * 1024 * 1024;

let sinceCheck = 0;
let baseline = 0;

export function transferred(bytes: number): void {
  sinceCheck += bytes;
  if (sinceCheck < CHECK_EVERY_BYTES) return;
  sinceCheck = 0;
  const rss = process.memoryUsage.rss();
  if (baseline === 0 || rss < baseline) {
    baseline = rss;
    return;
  }
  if (rss - baseline < GROWTH_LIMIT_BYTES) return;
  Bun.gc(true);
  baseline = process.memoryUsage.rss();
}
