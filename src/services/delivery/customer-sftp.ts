import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../context";
import type { RunBody } from "../runs/start-run";

export interface CustomerDelivery {
  workspaceId: string;
  connectionId: string;
  /** The exact name to deliver under, inside the server's outbound folder. */
  filename: string;
  openBody: () => Promise<RunBody>;
}

/**
 * Writes an outbound file to a self-hosted connection's own SFTP server
 * (outbound folder; temporary name, then rename). The customer-SFTP work
 * (issue 8) implements it; until then a self-hosted delivery fails the run
 * with this message instead of pretending it was delivered.
 */
export async function deliverToCustomerSftp(_ctx: ServiceContext, d: CustomerDelivery): Promise<{ remotePath: string }> {
  throw new AppError("conflict", `connection '${d.connectionId}' is self-hosted; delivery to customer SFTP servers is not available in this build`);
}
