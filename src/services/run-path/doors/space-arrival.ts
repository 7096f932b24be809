import { z } from "zod";
import { AppError } from "../../../domain/errors";
import type { ServiceContext } from "../../context";
import { ingest, recordArrival } from "../ingest";
import { spaceKey } from "../../spaces";
import { baseName } from "../../space-files/paths";

/**
 * A file that arrived in a connection's space (an upload closed, or a
 * temporary name renamed, into the inbound folder) over the hosted SFTP
 * server or through the documents API (`door`) is handed to pipelines
 * by a durable job enqueued as soon as it is stored: the client's CLOSE is
 * answered without waiting for each pipeline to copy the file, and a crash
 * after the store does not lose the arrival (the job runs again; the runs'
 * idempotency key, from path, size and ETag, keeps them from doubling).
 */
export const HOSTED_ARRIVAL_JOB = "sftp.arrival";
export const HOSTED_ARRIVAL_ATTEMPTS = 5;

/** The doors into a space; jobs enqueued before `door` existed are SFTP arrivals. */
export const SPACE_DOORS = ["sftp", "documents"] as const;
export type SpaceDoor = (typeof SPACE_DOORS)[number];

export const HostedArrivalPayload = z.object({
  workspaceId: z.string().min(1),
  connectionId: z.string().min(1),
  door: z.enum(SPACE_DOORS).default("sftp"),
  username: z.string().optional(),
  /** documents: the key or person that put the file there. */
  actor: z.string().optional(),
  path: z.string().min(1),
  size: z.number().int().min(0),
  etag: z.string(),
});
export type HostedArrivalPayload = z.input<typeof HostedArrivalPayload>;

const doorOf = (p: HostedArrivalPayload): SpaceDoor => p.door ?? "sftp";
const idempotencyKey = (p: HostedArrivalPayload) => `${doorOf(p)}:${p.connectionId}:${p.path}:${p.size}:${p.etag}`;
const metadataOf = (p: HostedArrivalPayload) => (doorOf(p) === "sftp" ? { username: p.username, etag: p.etag } : { actor: p.actor, etag: p.etag });

export async function enqueueArrival(ctx: ServiceContext, p: HostedArrivalPayload): Promise<void> {
  ctx.metrics.bytesReceived(doorOf(p) === "sftp" ? "hosted_sftp" : "documents", p.size);
  await ctx.queue.add({ name: HOSTED_ARRIVAL_JOB, payload: p, key: idempotencyKey(p), maxAttempts: HOSTED_ARRIVAL_ATTEMPTS });
}

/** Starts one run per active inbound pipeline of the connection, reading the stored file back for each. */
export async function handleHostedArrival(ctx: ServiceContext, p: HostedArrivalPayload): Promise<void> {
  const key = spaceKey(p.workspaceId, p.connectionId, p.path);
  const base = { workspaceId: p.workspaceId, connectionId: p.connectionId, transport: doorOf(p), filename: baseName(p.path), path: `/${p.path}`, size: p.size };
  const metadata = metadataOf(p);
  const info = await ctx.storage.stat(key);
  if (!info || info.etag !== p.etag || info.size !== p.size) {
    // The newer file (if any) has its own arrival; this one's bytes are gone.
    const reason = info ? "replaced by a newer upload before its runs started" : "removed before its runs started";
    await recordArrival(ctx, { ...base, outcome: "ignored", reason, metadata });
    return;
  }
  const { transport, ...file } = base;
  await ingest(ctx, {
    door: transport,
    ...file,
    metadata,
    idempotencyKey: idempotencyKey(p),
    openBody: async () => {
      const body = await ctx.storage.get(key);
      if (!body) throw new AppError("not_found", "the file was removed before this pipeline read it");
      return body;
    },
  });
}

/** The job's last attempt failed (storage or database unavailable throughout): the arrival is recorded as rejected, with the reason. */
export async function giveUpHostedArrival(ctx: ServiceContext, p: HostedArrivalPayload, error: Error): Promise<void> {
  await recordArrival(ctx, {
    workspaceId: p.workspaceId,
    connectionId: p.connectionId,
    transport: doorOf(p),
    filename: baseName(p.path),
    path: `/${p.path}`,
    size: p.size,
    outcome: "rejected",
    reason: `could not start runs: ${error.message}`,
    metadata: metadataOf(p),
  });
}
