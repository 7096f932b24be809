import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/**
 * Links the local store hands out are HMAC-SHA256 signatures over what the
 * link may do: method, key, expiry, and whatever else is bound (attachment
 * name, content type, multipart upload and part). Changing any of them, or
 * using the link with another method, breaks the signature.
 */
export interface LinkClaims {
  method: "GET" | "PUT";
  key: string;
  /** Unix seconds. */
  expires: number;
  filename?: string;
  contentType?: string;
  uploadId?: string;
  partNumber?: number;
  /** PUT: the exact number of bytes the body must have (an upload ticket's declared size). */
  size?: number;
}

/**
 * The signing key is derived from the encryption key (HKDF, its own label),
 * so the key that encrypts stored credentials never signs anything itself
 * and a leaked signature says nothing about it.
 */
export function deriveSigningKey(encryptionKey: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", encryptionKey, Buffer.alloc(0), "file-pipeline-service/storage-link-signing/v1", 32));
}

function canonical(c: LinkClaims): string {
  // Newline-separated: none of the fields can contain a newline (keys refuse control characters, the rest are encoded).
  return [
    "v1",
    c.method,
    c.key,
    String(c.expires),
    encodeURIComponent(c.filename ?? ""),
    encodeURIComponent(c.contentType ?? ""),
    c.uploadId ?? "",
    c.partNumber === undefined ? "" : String(c.partNumber),
    // Only links that bind a size carry the line, so links made before it existed keep their signatures.
    ...(c.size === undefined ? [] : [`size=${c.size}`]),
  ].join("\n");
}

export function sign(signingKey: Buffer, claims: LinkClaims): string {
  return createHmac("sha256", signingKey).update(canonical(claims)).digest("base64url");
}

export function signatureMatches(signingKey: Buffer, claims: LinkClaims, signature: string): boolean {
  const expected = Buffer.from(sign(signingKey, claims));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
