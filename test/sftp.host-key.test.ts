import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { utils } from "ssh2";
import { generateHostKeyPair, HOST_KEY_FILE, loadHostKey } from "../src/sftp/host-key";

/**
 * The hosted SFTP server's generated host key. Under Bun about 3 in 1,000
 * pairs from ssh2's generateKeyPairSync("ed25519") are malformed (a 31-byte
 * key) and unreadable by ssh2 itself; a fresh service then failed to start.
 */
const dir = mkdtempSync(join(tmpdir(), "fps-hostkey-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const readable = (pem: string) => {
  const parsed = utils.parseKey(pem);
  return !(parsed instanceof Error);
};

test("2,000 generated host keys: every one is readable by ssh2, and a sample by OpenSSH's ssh-keygen", async () => {
  const pairs = Array.from({ length: 2000 }, () => generateHostKeyPair());
  expect(pairs.filter((p) => !readable(p.private))).toEqual([]);
  for (let i = 0; i < 5; i++) {
    const path = join(dir, `sample_${i}`);
    writeFileSync(path, pairs[i]!.private, { mode: 0o600 });
    const p = Bun.spawnSync(["ssh-keygen", "-y", "-f", path]);
    expect(p.stderr.toString()).toBe("");
    expect(p.stdout.toString().trim()).toBe(pairs[i]!.public.trim());
  }
});

test("a malformed pair is replaced by a good one; a generator that never gives one fails with a message naming SFTP_HOST_KEY", () => {
  const good = utils.generateKeyPairSync("ed25519");
  // A key whose private half lost a byte, as the malformed ones do.
  const lines = good.private.trim().split("\n");
  const body = Buffer.from(lines.slice(1, -1).join(""), "base64");
  const broken = { private: `${lines[0]}\n${body.subarray(0, body.length - 9).toString("base64")}\n${lines.at(-1)}\n`, public: good.public };
  expect(readable(broken.private)).toBe(false);
  const given = [broken, broken, good];
  expect(generateHostKeyPair(() => given.shift()!)).toBe(good);
  expect(given).toEqual([]);
  expect(() => generateHostKeyPair(() => broken)).toThrow("set SFTP_HOST_KEY to a key made with ssh-keygen -t ed25519");
});

test("the key generated on first start is kept in DATA_DIR (mode 0600) and read back unchanged", () => {
  const dataDir = join(dir, "data");
  const first = loadHostKey({ dataDir, configured: null });
  expect(first.source).toBe("generated");
  expect(statSync(join(dataDir, HOST_KEY_FILE)).mode & 0o777).toBe(0o600);
  const again = loadHostKey({ dataDir, configured: null });
  expect(again.source).toBe("data-dir");
  expect(again.fingerprint).toBe(first.fingerprint);
  expect(again.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
});
