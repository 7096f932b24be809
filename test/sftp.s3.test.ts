import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listArrivalRows } from "../src/services/arrivals/list-arrivals";
import { spaceKey } from "../src/services/spaces";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, waitForRun } from "./helpers/runs";
import { startS3, type TestS3 } from "./helpers/s3";
import { type SftpLogin, sftpBatch } from "./helpers/sftp";

/**
 * The hosted SFTP server over S3 (s3rver on loopback): the same chroot,
 * streamed uploads (a multipart upload once the file passes one part),
 * ranged reads, folders as prefixes and markers, and runs started from it.
 */
// Each test drives real OpenSSH processes against a real S3-compatible server: more than the 5 s default.
setDefaultTimeout(60_000);
let s3: TestS3;
let h: Harness;
let port: number;
let ws: TestWorkspace;
let work: string;
let partner: { id: string };
const PASSWORD = "s3-partner-password";
const login = (): SftpLogin => ({ port, user: "s3-partner", password: PASSWORD });
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

beforeAll(async () => {
  s3 = await startS3();
  h = await Harness.start({ env: s3.env });
  expect(h.svc.storage.kind).toBe("s3");
  port = await h.service.sftp.listen(0, "127.0.0.1");
  ws = await h.workspace();
  work = mkdtempSync(join(tmpdir(), "fps-sftp-s3-"));
  partner = await h.ok(ws, "POST", "/connections", { name: "S3 partner", type: "SFTP", sftpUsername: "s3-partner", sftpPassword: PASSWORD });
  await createPipeline(h, ws, { connectionId: partner.id });
});
afterAll(async () => {
  await h.close();
  await s3.stop();
});

test("put (larger than one S3 part), ls, get and reget: the bytes come back as sent", async () => {
  const bytes = randomBytes(9 * 1024 * 1024 + 17);
  writeFileSync(join(work, "large.bin"), bytes);
  writeFileSync(join(work, "partial.bin"), bytes.subarray(0, 1_000_000));
  const r = await sftpBatch(login(), ["put large.bin /outbound/large.bin", "ls -l /outbound", "get /outbound/large.bin copy.bin", "reget /outbound/large.bin partial.bin"], { cwd: work });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/-rw-r--r-- .* 9437201 .* large\.bin/);
  expect(sha(readFileSync(join(work, "copy.bin")))).toBe(sha(bytes));
  expect(sha(readFileSync(join(work, "partial.bin")))).toBe(sha(bytes));
  expect((await h.svc.storage.stat(spaceKey(ws.workspaceId, partner.id, "outbound/large.bin")))?.size).toBe(bytes.length);
});

test("folders: mkdir, a folder renamed with its files, rmdir; escapes refused", async () => {
  writeFileSync(join(work, "a.txt"), "a\n");
  const r = await sftpBatch(
    login(),
    [
      "mkdir /outbound/2026",
      "mkdir /outbound/2026/11",
      "put a.txt /outbound/2026/11/a.txt",
      "rename /outbound/2026 /outbound/archive",
      "ls -1 /outbound/archive/11",
      "rm /outbound/archive/11/a.txt",
      "rmdir /outbound/archive/11",
      "rmdir /outbound/archive",
      "-cd /..",
      "-get /../../etc/passwd",
      "ls -1",
    ],
    { cwd: work },
  );
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("/outbound/archive/11/a.txt\n");
  expect(r.stderr).toContain("leaves your folder");
  expect(r.stdout.endsWith("ls -1\ninbound\noutbound\n")).toBe(true);
  const left = await h.svc.storage.list(spaceKey(ws.workspaceId, partner.id, "outbound/"), {});
  expect(left.objects.map((o) => o.key.split("/").pop())).toEqual(["large.bin"]);
});

test("an upload renamed from .part into inbound starts the pipeline's run; the .part itself started nothing", async () => {
  writeFileSync(join(work, "items.csv"), ITEMS_CSV);
  const r = await sftpBatch(login(), ["put items.csv /inbound/items.csv.part"], { cwd: work });
  expect(r.code).toBe(0);
  await Bun.sleep(400);
  expect((await listArrivalRows(h.svc, { workspaceId: ws.workspaceId, connectionId: partner.id, limit: 10, offset: 0 })).total).toBe(0);
  expect((await sftpBatch(login(), ["rename /inbound/items.csv.part /inbound/items.csv"])).code).toBe(0);
  let rows: Awaited<ReturnType<typeof listArrivalRows>>["rows"] = [];
  for (let i = 0; i < 200 && rows.length === 0; i++) {
    rows = (await listArrivalRows(h.svc, { workspaceId: ws.workspaceId, connectionId: partner.id, limit: 10, offset: 0 })).rows;
    if (rows.length === 0) await Bun.sleep(50);
  }
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ filename: "items.csv", path: "/inbound/items.csv", outcome: "started" });
  const run = await waitForRun(h, ws, rows[0]!.runIds[0]!, ["completed", "failed"]);
  expect(run.status).toBe("completed");
});
