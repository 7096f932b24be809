import { and, eq } from "drizzle-orm";
import type { OutputFormat } from "../../../../engine/types";
import type { ServiceContext } from "../../../context";
import type { RunRow } from "../../../runs/record";
import { OUTBOUND_FOLDER, spaceKey } from "../../../spaces";
import type { ConnectionPgp } from "../../../connections/pgp-keys";
import { deliverToCustomerSftp } from "./customer-sftp";
import { encryptStoredFile } from "./pgp";
import { checkFileName, defaultDeliveredName } from "./names";

/**
 * Outbound delivery: the processed file of an outbound run is written to
 * its connection's destination before the run is marked `delivered`
 * (docs/decisions/outbound.md):
 * - a hosted connection: its space's outbound folder (`/outbound/<name>` on
 *   the hosted SFTP server and in the documents API);
 * - a self-hosted connection: the customer's own SFTP server, through
 *   deliverToCustomerSftp (its outbound folder; temporary name, then rename).
 *
 * A delivery that cannot work now (storage or the customer's server
 * unreachable, refused login...) throws a plain Error: the run.process job
 * retries with backoff and the run fails after the last attempt with the
 * message. One that can never work (the connection was deleted, or is not
 * SFTP) throws PermanentDeliveryError: the run fails at once.
 */
export interface DeliveryRecord {
  connectionId: string;
  /** hosted: the connection's space; sftp: the customer's server. */
  kind: "hosted" | "sftp";
  /** The exact delivered name. */
  filename: string;
  /** Where it was written: `/outbound/<name>` in the space, or the path on the customer's server. */
  path: string;
  /** The processed file delivered (kept beside the run's original). */
  key: string;
  format: OutputFormat;
  at: string;
}

export class PermanentDeliveryError extends Error {
  override readonly name = "PermanentDeliveryError";
}

/** The name an outbound run's file is delivered under: the upload's outputFilename, else the received name with the format's extension. */
export function deliveredFilename(row: Pick<RunRow, "filename" | "metadata">, format: OutputFormat): string {
  const asked = (row.metadata.arrival as { outputFilename?: unknown } | undefined)?.outputFilename;
  if (typeof asked === "string") {
    try {
      return checkFileName(asked, "outputFilename");
    } catch {
      // Checked when the upload was created; a run started otherwise falls back to the default.
    }
  }
  return defaultDeliveredName(row.filename, format);
}

/**
 * `pgp`: the pipeline asks for OpenPGP (mappings.options.pgpEncrypt): the
 * file is encrypted to the connection's partner key and delivered with
 * `.pgp` added to its name.
 */
export async function deliverRun(
  ctx: ServiceContext,
  row: RunRow,
  processed: { key: string; format: OutputFormat; pgp?: ConnectionPgp },
): Promise<DeliveryRecord> {
  let filename = deliveredFilename(row, processed.format);
  const c = ctx.db.t.connections;
  const [conn] = await ctx.db.read
    .select({ id: c.id, name: c.name, type: c.type, useHostedSftp: c.useHostedSftp })
    .from(c)
    .where(and(eq(c.id, row.connectionId), eq(c.workspaceId, row.workspaceId)));
  if (!conn) {
    throw new PermanentDeliveryError(
      `delivery failed: connection '${row.connectionName}' (${row.connectionId}) was deleted before the file could be delivered; the processed file is kept with the run`,
    );
  }
  if (conn.type !== "SFTP") {
    throw new PermanentDeliveryError(`delivery failed: connection '${conn.name}' is ${conn.type}; outbound files are delivered over SFTP only`);
  }
  let key = processed.key;
  if (processed.pgp) {
    const partnerPublicKey = processed.pgp.partnerPublicKey;
    if (!partnerPublicKey) {
      throw new PermanentDeliveryError(
        `delivery failed: the pipeline encrypts outbound files (mappings.options.pgpEncrypt) but connection '${conn.name}' has no pgpPartnerPublicKey to encrypt to`,
      );
    }
    key = `${processed.key}.pgp`;
    filename = `${filename}.pgp`;
    try {
      await encryptStoredFile(ctx, processed.key, key, { partnerPublicKey, signing: processed.pgp.signing });
    } catch (e) {
      throw new PermanentDeliveryError(`delivery failed: the file could not be encrypted to connection '${conn.name}''s pgpPartnerPublicKey: ${message(e)}`);
    }
  }
  const base = { connectionId: conn.id, filename, key, format: processed.format };
  if (conn.useHostedSftp) {
    const path = `${OUTBOUND_FOLDER}/${filename}`;
    try {
      // The store's copy is atomic: a client of the hosted server sees the old file or the new one, never half of it.
      await ctx.storage.copy(key, spaceKey(row.workspaceId, conn.id, path));
    } catch (e) {
      throw new Error(`delivery to the outbound folder of hosted connection '${conn.name}' failed: ${message(e)}`);
    }
    return { ...base, kind: "hosted", path: `/${path}`, at: ctx.clock.now().toISOString() };
  }
  let remotePath: string;
  try {
    ({ remotePath } = await deliverToCustomerSftp(ctx, {
      workspaceId: row.workspaceId,
      connectionId: conn.id,
      filename,
      deliveryId: row.id,
      openBody: async () => {
        const body = await ctx.storage.get(key);
        if (!body) throw new Error(`the processed file ${key} is missing`);
        return body;
      },
    }));
  } catch (e) {
    throw new Error(`delivery to the SFTP server of connection '${conn.name}' failed: ${message(e)}`);
  }
  return { ...base, kind: "sftp", path: remotePath, at: ctx.clock.now().toISOString() };
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 400);
