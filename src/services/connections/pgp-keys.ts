import { and, eq } from "drizzle-orm";
import type { PgpKeys } from "../../engine/parse/pgp";
import type { ServiceContext } from "../context";

/** What a connection holds for OpenPGP, opened: the engine's keys for inbound files, the partner's key for outbound ones. */
export interface ConnectionPgp {
  /** Set when the connection has a private key: inbound OpenPGP files are decrypted with it. */
  inbound?: PgpKeys;
  /** The partner's public key, to encrypt outbound files to. */
  partnerPublicKey?: string;
  /** The connection's own key, to sign what it encrypts. */
  signing?: { privateKey: string; passphrase?: string };
}

export async function connectionPgp(ctx: ServiceContext, ref: { workspaceId: string; connectionId: string }): Promise<ConnectionPgp> {
  const c = ctx.db.t.connections;
  const [row] = await ctx.db.read
    .select({ key: c.pgpPrivateKeyEnc, passphrase: c.pgpPassphraseEnc, partner: c.pgpPartnerPublicKey })
    .from(c)
    .where(and(eq(c.id, ref.connectionId), eq(c.workspaceId, ref.workspaceId)));
  if (!row) return {};
  const privateKey = row.key ? ctx.secrets.open(row.key) : undefined;
  const passphrase = row.passphrase ? ctx.secrets.open(row.passphrase) : undefined;
  const partnerPublicKey = row.partner ?? undefined;
  return {
    inbound: privateKey ? { privateKey, passphrase, partnerPublicKey } : undefined,
    partnerPublicKey,
    signing: privateKey ? { privateKey, passphrase } : undefined,
  };
}
