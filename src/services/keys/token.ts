import { createHash, randomInt, timingSafeEqual } from "node:crypto";

/**
 * An API key reads `fps_<lookup>_<secret>`. The lookup part finds the row;
 * the secret is stored only as a SHA-256 digest and compared in constant
 * time. 32 base62 characters carry about 190 bits, so a plain digest (not a
 * slow password hash) is the right tool.
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const PREFIX = "fps";
const LOOKUP_LEN = 12;
const SECRET_LEN = 32;
const SHAPE = new RegExp(`^${PREFIX}_([0-9A-Za-z]{${LOOKUP_LEN}})_([0-9A-Za-z]{${SECRET_LEN}})$`);

function random(len: number): string {
  let s = "";
  for (let i = 0; i < len; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

export function digest(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export interface NewToken {
  token: string;
  lookup: string;
  secretHash: string;
  start: string;
}

export function newToken(): NewToken {
  const lookup = random(LOOKUP_LEN);
  const secret = random(SECRET_LEN);
  const token = `${PREFIX}_${lookup}_${secret}`;
  return { token, lookup, secretHash: digest(secret), start: token.slice(0, PREFIX.length + 1 + 6) };
}

export function parseToken(token: string): { lookup: string; secret: string } | null {
  const m = SHAPE.exec(token);
  return m ? { lookup: m[1]!, secret: m[2]! } : null;
}

/**
 * Where every check writes the secret's digest: one buffer for the process
 * (checks are synchronous), so a request allocates no hasher object. A
 * node:crypto Hash and its digest Buffer per request are native-backed
 * objects that each garbage collection must finalise: under load they
 * doubled the service's collection pauses (docs/decisions/hot-path.md).
 */
const checked = new Uint8Array(32);

/** `stored`: the row's hex digest, or its bytes (the key cache keeps them decoded). */
export function secretMatches(secret: string, stored: string | Uint8Array): boolean {
  const a = Bun.SHA256.hash(secret, checked) as Uint8Array;
  const b = typeof stored === "string" ? Buffer.from(stored, "hex") : stored;
  return a.length === b.length && timingSafeEqual(a, b);
}
