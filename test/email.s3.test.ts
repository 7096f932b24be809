import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { spaceKey } from "../src/services/spaces";
import { arrivals, emailConnection, sendMail, startSmtp } from "./helpers/email";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, waitForRun } from "./helpers/runs";
import { startS3, type TestS3 } from "./helpers/s3";

/** E-mail over the S3 store (s3rver on loopback): an attachment larger than one S3 part, kept for two inboxes (put, then copy). */
setDefaultTimeout(60_000);
let s3: TestS3;
let h: Harness;
let ws: TestWorkspace;
let port: number;

beforeAll(async () => {
  s3 = await startS3();
  h = await Harness.start({ env: { ...s3.env, SMTP_MAX_BYTES: String(20 * 1024 * 1024) } });
  expect(h.svc.storage.kind).toBe("s3");
  ws = await h.workspace();
  port = await startSmtp(h);
});
afterAll(async () => {
  await h.close();
  await s3.stop();
});

test("a 6 MB attachment to two inboxes is kept byte for byte in both spaces and its runs complete", async () => {
  const rows = ["SKU,Qty,Name"];
  for (let i = 0, length = 0; length < 6 * 1024 * 1024; i++) {
    const row = `s-${i},${i % 90},Part number ${i}`;
    rows.push(row);
    length += row.length + 1;
  }
  const csv = `${rows.join("\n")}\n`;
  const sha = createHash("sha256").update(csv).digest("hex");
  const a = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
  const b = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
  await createPipeline(h, ws, { connectionId: a.id });
  await createPipeline(h, ws, { connectionId: b.id });
  const info = await sendMail(port, { to: [a.address, b.address], attachments: [{ filename: "parts.csv", content: csv }] });
  expect(info.accepted.sort()).toEqual([a.address, b.address].sort());
  for (const inbox of [a, b]) {
    const [arrival] = (await arrivals(h, ws, inbox.id)).data;
    expect(arrival).toMatchObject({ outcome: "started", filename: "parts.csv", size: csv.length });
    const kept = await h.svc.storage.get(spaceKey(ws.workspaceId, inbox.id, arrival.path));
    expect(createHash("sha256").update(Buffer.from(await new Response(kept!).arrayBuffer())).digest("hex")).toBe(sha);
    const run = await waitForRun(h, ws, arrival.runIds[0], ["completed", "failed"], { timeoutMs: 60_000 });
    expect(run.status, run.errorMessage).toBe("completed");
    expect(run.metadata.rows.valid).toBe(rows.length - 1);
    expect(run.size).toBe(csv.length);
  }
});
