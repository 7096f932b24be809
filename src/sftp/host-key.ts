import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ParsedKey, utils } from "ssh2";

export const HOST_KEY_FILE = "sftp_host_ed25519_key";

export interface HostKey {
  /** The private key as ssh2 takes it. */
  pem: string;
  /** `SHA256:...`, as `ssh-keygen -lf` and OpenSSH's "host key fingerprint" print it. */
  fingerprint: string;
  /** The public key as an OpenSSH line, for partners' known_hosts. */
  publicKey: string;
  source: "configured" | "generated" | "data-dir";
}

/**
 * The hosted SFTP server's host key. Given by SFTP_HOST_KEY (a file path,
 * or the key itself in PEM or OpenSSH form), or else kept in
 * DATA_DIR/sftp_host_ed25519_key: generated once (ed25519) on the first
 * start and read back afterwards, so partners' known_hosts entries stay
 * valid across restarts. Several instances sharing one DATA_DIR (or one
 * SFTP_HOST_KEY) present the same key.
 */
export function loadHostKey(opts: { dataDir: string; configured: string | null }): HostKey {
  if (opts.configured) {
    const text = opts.configured.includes("-----BEGIN") ? opts.configured : readConfigured(opts.configured);
    return describe(text, "configured", "SFTP_HOST_KEY");
  }
  const path = join(opts.dataDir, HOST_KEY_FILE);
  if (existsSync(path)) return describe(readFileSync(path, "utf8"), "data-dir", path);
  mkdirSync(opts.dataDir, { recursive: true });
  const pair = generateHostKeyPair();
  try {
    writeFileSync(path, pair.private, { mode: 0o600, flag: "wx" });
    chmodSync(path, 0o600);
    writeFileSync(`${path}.pub`, `${pair.public.trim()} fps-hosted-sftp\n`, { mode: 0o644 });
  } catch (e) {
    // Another process sharing DATA_DIR wrote it first: use that one.
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return describe(readFileSync(path, "utf8"), "data-dir", path);
    throw e;
  }
  return describe(pair.private, "generated", path);
}

/** Attempts before giving up on a key pair ssh2 can read back (each fails with probability ~0.003). */
const KEYGEN_ATTEMPTS = 8;

/**
 * A new ed25519 host key pair, checked before it is kept. Under Bun about 3
 * in 1,000 of the pairs ssh2's `generateKeyPairSync` gives are malformed (a
 * 31-byte key where 32 are due: a leading zero byte lost) and ssh2 itself
 * cannot read them back, which made a fresh service fail to start now and
 * then. A pair is kept only when it parses and signs data its public half
 * verifies; otherwise another is generated.
 */
export function generateHostKeyPair(generate: () => { private: string; public: string } = () => utils.generateKeyPairSync("ed25519")): { private: string; public: string } {
  for (let attempt = 1; ; attempt++) {
    const pair = generate();
    const parsed = utils.parseKey(pair.private);
    const pub = utils.parseKey(pair.public);
    const key = parsed instanceof Error ? undefined : Array.isArray(parsed) ? parsed[0] : parsed;
    const pubKey = pub instanceof Error ? undefined : Array.isArray(pub) ? pub[0] : pub;
    if (key && pubKey) {
      const probe = Buffer.from("fps host key check");
      const sig = key.sign(probe);
      if (sig instanceof Buffer && pubKey.verify(probe, sig) === true) return pair;
    }
    if (attempt >= KEYGEN_ATTEMPTS) throw new Error(`could not generate an ed25519 host key that ssh2 can read (${KEYGEN_ATTEMPTS} attempts); set SFTP_HOST_KEY to a key made with ssh-keygen -t ed25519`);
  }
}

function readConfigured(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new Error(`SFTP_HOST_KEY: cannot read '${path}': ${(e as Error).message}`);
  }
}

function describe(pem: string, source: HostKey["source"], where: string): HostKey {
  const parsed = utils.parseKey(pem);
  const key: ParsedKey | undefined = parsed instanceof Error ? undefined : Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key) throw new Error(`${where}: not a private key ssh2 can read (${(parsed as Error).message}); use an OpenSSH or PEM key (ssh-keygen -t ed25519 -N '' -f key)`);
  if (!key.isPrivateKey()) throw new Error(`${where}: a public key was given where the private host key is needed`);
  const blob = key.getPublicSSH();
  const fingerprint = `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
  return { pem, fingerprint, publicKey: `${key.type} ${blob.toString("base64")}`, source };
}
