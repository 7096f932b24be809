import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Encrypts secrets the service must read back in clear (customer SFTP
 * passwords and keys, webhook signing secrets): AES-256-GCM with a random
 * 96-bit nonce per value. Stored form: `v1.<nonce>.<tag>.<ciphertext>` in
 * base64url.
 */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("encryption key must be 32 bytes");
  return {
    seal(plain) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      const tag = cipher.getAuthTag();
      return ["v1", nonce.toString("base64url"), tag.toString("base64url"), ct.toString("base64url")].join(".");
    },
    open(sealed) {
      const [v, nonce, tag, ct] = sealed.split(".");
      if (v !== "v1" || !nonce || !tag || ct === undefined) throw new Error("not a sealed secret");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(nonce, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(ct, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}

/**
 * The embedded default keeps its key next to its data, created on first
 * start with owner-only permissions. Scale-out deployments pass
 * ENCRYPTION_KEY instead (src/config.ts requires it with Postgres).
 */
export function loadOrCreateKeyFile(dataDir: string): Buffer {
  const path = join(dataDir, "encryption.key");
  if (existsSync(path)) {
    const key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
    if (key.length !== 32) throw new Error(`${path}: expected 32 base64-encoded bytes`);
    return key;
  }
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(path, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
  return key;
}
