import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The real GnuPG from Debian's packages (/usr/bin/gpg) in a temporary
 * GNUPGHOME: key pairs made with `--quick-gen-key`, files encrypted, signed
 * and decrypted by gpg itself, so the service is tested against what a
 * partner's tooling produces.
 */
export class Gpg {
  readonly home = mkdtempSync(join(tmpdir(), "fps-gpg-"));

  constructor() {
    // A fixed S2K count spares gpg-agent its calibration, which takes seconds on a busy machine.
    writeFileSync(join(this.home, "gpg-agent.conf"), "s2k-count 65536\n");
  }

  run(args: string[], input?: Uint8Array | string): Uint8Array {
    const r = Bun.spawnSync(["gpg", "--batch", "--yes", "--quiet", "--pinentry-mode", "loopback", "--trust-model", "always", ...args], {
      env: { ...process.env, GNUPGHOME: this.home },
      stdin: input === undefined ? "ignore" : typeof input === "string" ? new TextEncoder().encode(input) : input,
    });
    if (r.exitCode !== 0) throw new Error(`gpg ${args.join(" ")} failed: ${r.stderr.toString()}`);
    return r.stdout;
  }

  /** A key pair (ed25519 signing, cv25519 encryption); returns the armored public and private keys. */
  generate(email: string, passphrase = ""): { publicKey: string; privateKey: string } {
    this.run(["--passphrase", passphrase, "--quick-gen-key", `${email.split("@")[0]} <${email}>`, "future-default", "default", "never"]);
    return {
      publicKey: this.run(["--armor", "--export", email]).toString(),
      privateKey: this.run(["--passphrase", passphrase, "--armor", "--export-secret-keys", email]).toString(),
    };
  }

  /** Encrypts to `to` (and signs as `signer`, whose passphrase is `passphrase`). */
  encrypt(data: string | Uint8Array, opts: { to: string; signer?: string; passphrase?: string; armor?: boolean }): Uint8Array {
    const file = join(this.home, `in-${crypto.randomUUID()}`);
    writeFileSync(file, data);
    const args = ["--passphrase", opts.passphrase ?? "", "-r", opts.to, ...(opts.armor ? ["--armor"] : [])];
    if (opts.signer) args.push("-u", opts.signer, "--sign");
    return this.run([...args, "--encrypt", "-o", "-", file]);
  }

  /** Decrypts with the secret keys in this home; returns the plaintext and gpg's status lines (GOODSIG, ...). */
  decrypt(data: Uint8Array, passphrase = ""): { plain: Uint8Array; status: string } {
    const file = join(this.home, `enc-${crypto.randomUUID()}`);
    const status = join(this.home, `status-${crypto.randomUUID()}`);
    writeFileSync(file, data);
    const plain = this.run(["--passphrase", passphrase, "--status-file", status, "--decrypt", file]);
    return { plain, status: readFileSync(status, "utf8") };
  }

  /** Imports an armored key (a partner's public key). */
  import(armored: string): void {
    this.run(["--import"], armored);
  }

  close(): void {
    Bun.spawnSync(["gpgconf", "--kill", "gpg-agent"], { env: { ...process.env, GNUPGHOME: this.home } });
    rmSync(this.home, { recursive: true, force: true });
  }
}
