import { EngineInputError, type ParseLimits } from "../types";
import { InflateBudget } from "./bytes";

/** A connection's OpenPGP material, as the engine receives it in the request (docs/decisions/formats.md). */
export interface PgpKeys {
  /** Armored private key that decrypts inbound files. */
  privateKey: string;
  passphrase?: string;
  /** Armored public key of the partner: when set, inbound files must carry a good signature by it. */
  partnerPublicKey?: string;
}

const PGP_NAME = /\.(pgp|gpg|asc)$/i;
const ARMOR = "-----BEGIN PGP MESSAGE-----";

/** A name that says OpenPGP (`orders.csv.pgp`), or a content that begins as an OpenPGP message (armored or binary). */
export function isPgpInput(head: Uint8Array, filename: string): boolean {
  return PGP_NAME.test(filename) || isArmored(head) || isBinaryPgpMessage(head);
}

/** The name without its OpenPGP extension, so `orders.csv.pgp` is read as CSV. */
export function withoutPgpExtension(filename: string): string {
  return filename.replace(PGP_NAME, "");
}

function isArmored(head: Uint8Array): boolean {
  const start = new TextDecoder("latin1").decode(head.subarray(0, 256)).trimStart();
  return start.startsWith(ARMOR);
}

/**
 * An encrypted message starts with a public-key (tag 1) or symmetric-key
 * (tag 3) session key packet. The version octet after the packet's length
 * is checked too, so text whose first byte happens to look like such a
 * packet header (`É` is 0xC3) is not taken for one.
 */
function isBinaryPgpMessage(h: Uint8Array): boolean {
  const b = h[0];
  if (b === undefined || (b & 0x80) === 0) return false;
  let tag: number;
  let body: number;
  if ((b & 0x40) !== 0) {
    tag = b & 0x3f;
    const l = h[1] ?? 0;
    body = l < 192 ? 2 : l < 224 ? 3 : l === 255 ? 6 : -1;
  } else {
    tag = (b >> 2) & 0x0f;
    const lengthType = b & 3;
    body = lengthType === 0 ? 2 : lengthType === 1 ? 3 : lengthType === 2 ? 5 : -1;
  }
  if (body < 0) return false;
  const version = h[body];
  if (tag === 1) return version === 3 || version === 6;
  if (tag === 3) return version === 4 || version === 5 || version === 6;
  return false;
}

/**
 * Decrypts an OpenPGP message as it streams: openpgp reads the message from
 * the source a piece at a time and hands on plaintext before the integrity
 * check at the end (`allowUnauthenticatedStream`), which then fails the
 * stream, and so the run, whose writes are abandoned. A partner key makes a
 * signature required: a missing or bad one fails the run the same way. The
 * plaintext is held to the inflation limits (an OpenPGP message may be
 * compressed inside).
 */
export async function decryptPgp(source: AsyncIterable<Uint8Array>, head: Uint8Array, keys: PgpKeys, limits: ParseLimits): Promise<AsyncGenerator<Uint8Array>> {
  const openpgp = await import("openpgp");
  const budget = new InflateBudget(limits, "The OpenPGP message");
  const counted = (async function* () {
    for await (const c of source) {
      budget.read(c.byteLength);
      yield c;
    }
  })();
  const armored = isArmored(head);
  let decryptionKey;
  try {
    decryptionKey = await openpgp.readPrivateKey({ armoredKey: keys.privateKey });
  } catch (e) {
    throw new EngineInputError(`The connection's pgpPrivateKey cannot be read: ${reason(e)}. Set it again (an armored OpenPGP private key).`);
  }
  if (!decryptionKey.isDecrypted()) {
    if (!keys.passphrase) throw new EngineInputError("The connection's pgpPrivateKey is protected by a passphrase: set pgpPassphrase on the connection.");
    try {
      decryptionKey = await openpgp.decryptKey({ privateKey: decryptionKey, passphrase: keys.passphrase });
    } catch (e) {
      throw new EngineInputError(`The connection's pgpPassphrase does not unlock its pgpPrivateKey (${reason(e)}).`);
    }
  }
  let verificationKeys;
  if (keys.partnerPublicKey) {
    try {
      verificationKeys = await openpgp.readKey({ armoredKey: keys.partnerPublicKey });
    } catch (e) {
      throw new EngineInputError(`The connection's pgpPartnerPublicKey cannot be read: ${reason(e)}.`);
    }
  }
  let data: ReadableStream<Uint8Array>;
  try {
    const message = armored
      ? await openpgp.readMessage({ armoredMessage: pull(text(counted)) })
      : await openpgp.readMessage({ binaryMessage: pull(counted) });
    const out = await openpgp.decrypt({
      message,
      decryptionKeys: decryptionKey,
      verificationKeys,
      expectSigned: verificationKeys !== undefined,
      format: "binary",
      config: { allowUnauthenticatedStream: true },
    });
    data = out.data as ReadableStream<Uint8Array>;
  } catch (e) {
    throw pgpError(e);
  }
  return (async function* () {
    try {
      for await (const c of data) {
        budget.inflate(c.byteLength);
        yield c;
      }
    } catch (e) {
      if (e instanceof EngineInputError) throw e;
      throw pgpError(e);
    }
  })();
}

/** A web stream that takes from `it` only when read (openpgp's streaming API is on web streams). */
function pull<T>(it: AsyncGenerator<T>): ReadableStream<T> {
  return new ReadableStream<T>(
    {
      async pull(c) {
        const r = await it.next();
        if (r.done) c.close();
        else c.enqueue(r.value);
      },
      async cancel() {
        await it.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

async function* text(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const d = new TextDecoder("utf-8");
  for await (const b of bytes) yield d.decode(b, { stream: true });
  const tail = d.decode();
  if (tail) yield tail;
}

function reason(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/^Error (decrypting|reading) message: /, "");
}

function pgpError(e: unknown): EngineInputError {
  if (e instanceof EngineInputError) return e;
  const msg = reason(e);
  if (/sign/i.test(msg)) {
    return new EngineInputError(`The OpenPGP message's signature does not verify with the connection's pgpPartnerPublicKey (${msg}); the file was not accepted.`);
  }
  if (/session key|decryption key|no (secret|private) key/i.test(msg)) {
    return new EngineInputError(`The OpenPGP message cannot be decrypted with the connection's pgpPrivateKey (${msg}): it was encrypted to another key.`);
  }
  return new EngineInputError(`The OpenPGP message cannot be read: ${msg}.`);
}
