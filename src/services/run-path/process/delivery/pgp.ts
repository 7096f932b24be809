import type { ServiceContext } from "../../../context";

/**
 * Encrypts a stored file to the partner's public key, streaming (openpgp's
 * web-stream API: the file is read as the ciphertext is written), and signs
 * it with the connection's own key when it has one, so the partner can
 * check who sent it. The result is stored at `to` (binary OpenPGP).
 */
export async function encryptStoredFile(
  ctx: ServiceContext,
  from: string,
  to: string,
  keys: { partnerPublicKey: string; signing?: { privateKey: string; passphrase?: string } },
): Promise<void> {
  const openpgp = await import("openpgp");
  const body = await ctx.storage.get(from);
  if (!body) throw new Error(`the processed file ${from} is missing`);
  const encryptionKeys = await openpgp.readKey({ armoredKey: keys.partnerPublicKey });
  let signingKeys;
  if (keys.signing) {
    signingKeys = await openpgp.readPrivateKey({ armoredKey: keys.signing.privateKey });
    if (!signingKeys.isDecrypted()) signingKeys = await openpgp.decryptKey({ privateKey: signingKeys, passphrase: keys.signing.passphrase ?? "" });
  }
  const message = await openpgp.createMessage({ binary: body as ReadableStream<Uint8Array> });
  const encrypted = (await openpgp.encrypt({ message, encryptionKeys, signingKeys, format: "binary" })) as ReadableStream<Uint8Array>;
  await ctx.storage.put(to, encrypted, { contentType: "application/pgp-encrypted" });
}
