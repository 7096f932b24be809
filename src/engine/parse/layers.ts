import { EngineInputError, type ParseLimits } from "../types";
import { ByteReader, gunzip, isGzip } from "./bytes";
import { decryptPgp, isPgpInput, type PgpKeys } from "./pgp";

/** Bytes looked at before deciding gzip, encoding and format. */
export const PEEK_BYTES = 64 * 1024;

/** An input with its OpenPGP and gzip layers taken off: the plain bytes, their first PEEK_BYTES, and which layers there were. */
export interface PlainBytes {
  reader: ByteReader;
  head: Uint8Array;
  gzip: boolean;
  /** Set when the input was an OpenPGP message (decrypted, its signature checked when the keys hold the partner's). */
  pgp?: { signatureVerified: boolean };
}

/**
 * Takes off an input's wrappings as it streams, in the order they are put
 * on: an OpenPGP message (by name or first bytes) is decrypted, then gzip
 * (by its first bytes) is inflated, each held to `limits`. Used by
 * openInput and by the unpacking of a packed file to a plain temp file
 * (src/engine/unpack.ts), so both refuse the same files with the same words.
 */
export async function plainBytes(source: AsyncIterable<Uint8Array>, opts: { filename: string; pgp?: PgpKeys }, limits: ParseLimits): Promise<PlainBytes> {
  let raw = new ByteReader(source);
  let rawHead = await raw.peek(PEEK_BYTES);
  if (rawHead.length === 0) throw new EngineInputError("The file is empty (0 bytes).");
  const pgp = isPgpInput(rawHead, opts.filename);
  if (pgp) {
    if (!opts.pgp) {
      throw new EngineInputError("The file is an OpenPGP message: set pgpPrivateKey (and pgpPassphrase) on the pipeline's connection so that it can be decrypted.");
    }
    raw = new ByteReader(await decryptPgp(raw.chunks(), rawHead, opts.pgp, limits));
    rawHead = await raw.peek(PEEK_BYTES);
    if (rawHead.length === 0) throw new EngineInputError("The file is empty once decrypted (an OpenPGP message holding 0 bytes).");
  }
  const gzip = isGzip(rawHead);
  const reader = gzip ? new ByteReader(gunzip(raw.chunks(), limits)) : raw;
  const head = gzip ? await reader.peek(PEEK_BYTES) : rawHead;
  if (head.length === 0) throw new EngineInputError("The file is empty once decompressed (a gzip file holding 0 bytes).");
  return { reader, head, gzip, ...(pgp ? { pgp: { signatureVerified: opts.pgp?.partnerPublicKey !== undefined } } : {}) };
}
