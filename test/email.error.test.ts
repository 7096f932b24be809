import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { spaceKey } from "../src/services/spaces";
import { arrivals, emailConnection, ITEMS_BY_FORMAT, sendMail, sendMailRefused, startSmtp } from "./helpers/email";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline } from "./helpers/runs";

/** Every mail that starts nothing is refused on the wire (550, 552) or recorded with its reason, visible through the API. */
const MAX_BYTES = 64 * 1024;
let h: Harness;
let ws: TestWorkspace;
let port: number;

beforeAll(async () => {
  h = await Harness.start({ env: { SMTP_MAX_BYTES: String(MAX_BYTES) } });
  ws = await h.workspace();
  port = await startSmtp(h);
});
afterAll(() => h.close());

const CSV = [{ filename: "items.csv", content: ITEMS_BY_FORMAT.csv! }];

async function runCount(connectionId: string): Promise<number> {
  const page = await h.ok(ws, "GET", `/pipeline-runs?clientId=${connectionId}&limit=100`);
  return (page.data ?? page).length;
}

describe("refused on the wire", () => {
  test("a recipient that is no inbox is refused with 550 at RCPT, and nothing is recorded", async () => {
    const inbox = await emailConnection(h, ws);
    const sftp = await h.ok(ws, "POST", "/connections", { name: "Plain SFTP", type: "SFTP", useHostedSFTP: true });
    const domain = inbox.address.split("@")[1];
    for (const to of [`nobody@${domain}`, `${inbox.address.split("@")[0]}@elsewhere.example`, `${sftp.sftpUsername ?? "sftp"}@${domain}`]) {
      const err = await sendMailRefused(port, { to, attachments: CSV });
      expect(err.responseCode).toBe(550);
      expect(err.message).toContain("no such inbox");
    }
    expect((await arrivals(h, ws, inbox.id)).data).toEqual([]);
    expect((await arrivals(h, ws, sftp.id)).data).toEqual([]);
  });

  test("addresses compare without case", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
    await createPipeline(h, ws, { connectionId: inbox.id });
    const info = await sendMail(port, { to: inbox.address.toUpperCase(), attachments: CSV });
    expect(info.response).toStartWith("250");
    expect((await arrivals(h, ws, inbox.id)).data.map((a) => a.outcome)).toEqual(["started"]);
  });

  test("a message over SMTP_MAX_BYTES is refused with 552; the refusal is recorded and nothing of it kept", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
    await createPipeline(h, ws, { connectionId: inbox.id });
    const big = `SKU,Qty,Name\n${"a-1,3,Bolt\n".repeat(Math.ceil((MAX_BYTES * 1.5) / 11))}`;
    const err = await sendMailRefused(port, { to: inbox.address, attachments: [{ filename: "big.csv", content: big }] });
    expect(err.responseCode).toBe(552);
    const [arrival] = (await arrivals(h, ws, inbox.id)).data;
    expect(arrival).toMatchObject({ outcome: "rejected", runIds: [], transport: "email" });
    expect(arrival.reason).toContain(`larger than the ${MAX_BYTES}-byte limit`);
    expect(arrival.size).toBeGreaterThan(MAX_BYTES);
    expect(arrival.metadata).toMatchObject({ envelopeFrom: "orders@partner.example", recipient: inbox.address });
    expect(await runCount(inbox.id)).toBe(0);
    expect((await h.svc.storage.list(spaceKey(ws.workspaceId, inbox.id, ""))).objects).toEqual([]);
    // The spool holds nothing once a message is handled.
    expect(readdirSync(join(h.dataDir, "spool", "smtp"))).toEqual([]);
  });

  test("EHLO advertises SIZE with the limit, and neither AUTH nor STARTTLS", async () => {
    const ehlo = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let buffer = "";
      let greeted = false;
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => {
        buffer += chunk;
        if (!greeted && buffer.includes("\r\n")) {
          greeted = true;
          buffer = "";
          socket.write("EHLO tester.example\r\n");
        } else if (greeted && /^250 .*\r\n/m.test(buffer)) {
          socket.end("QUIT\r\n");
          resolve(buffer);
        }
      });
      socket.on("error", reject);
    });
    expect(ehlo).toMatch(new RegExp(`^250[- ]SIZE ${MAX_BYTES}\\r$`, "m"));
    expect(ehlo).not.toContain("AUTH");
    expect(ehlo).not.toContain("STARTTLS");
  });
});

describe("recorded with the reason", () => {
  test("sender not allowed, subject not matching, no attachment: one arrival per message, no run, nothing kept", async () => {
    const inbox = await emailConnection(h, ws, {
      emailAllowedFormats: ["csv"],
      emailAllowedSenders: ["orders@partner.example"],
      emailSubjectFilter: "items",
    });
    await createPipeline(h, ws, { connectionId: inbox.id });
    await sendMail(port, { from: "mallory@partner.example", to: inbox.address, subject: "items", attachments: CSV });
    await sendMail(port, { to: inbox.address, subject: "Invoice 42", attachments: CSV });
    await sendMail(port, { to: inbox.address, subject: "items, as promised", text: "Forgot the file, sorry." });

    const { data, pagination } = await arrivals(h, ws, inbox.id);
    expect(pagination.total).toBe(3);
    const [noFile, wrongSubject, wrongSender] = data;
    expect(wrongSender).toMatchObject({ outcome: "rejected", runIds: [], metadata: { sender: "mallory@partner.example", attachments: ["items.csv"] } });
    expect(wrongSender.reason).toBe("sender 'mallory@partner.example' is not allowed (emailAllowedSenders: orders@partner.example)");
    expect(wrongSender.filename).toBeUndefined();
    expect(wrongSubject).toMatchObject({ outcome: "rejected", runIds: [], metadata: { subject: "Invoice 42" } });
    expect(wrongSubject.reason).toBe("subject 'Invoice 42' does not contain 'items' (emailSubjectFilter)");
    expect(noFile).toMatchObject({ outcome: "ignored", reason: "the message has no attachment", runIds: [] });
    expect(await runCount(inbox.id)).toBe(0);
    expect((await h.svc.storage.list(spaceKey(ws.workspaceId, inbox.id, ""))).objects).toEqual([]);
  });

  test("an attachment whose format is not allowed is refused alone; the allowed one beside it starts its run", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv", "json"] });
    await createPipeline(h, ws, { connectionId: inbox.id });
    await sendMail(port, {
      to: inbox.address,
      attachments: [
        { filename: "items.csv", content: ITEMS_BY_FORMAT.csv! },
        { filename: "invoice.pdf", content: Buffer.from("%PDF-1.4 not really"), contentType: "application/pdf" },
        { filename: "items.xml", content: ITEMS_BY_FORMAT.xml! },
        { filename: "logo", content: Buffer.from([0x89, 0x50, 0x4e, 0x47]), contentType: "image/png" },
      ],
    });
    const byName = Object.fromEntries((await arrivals(h, ws, inbox.id)).data.map((a) => [a.filename, a]));
    expect(Object.keys(byName).sort()).toEqual(["invoice.pdf", "items.csv", "items.xml", "logo"]);
    expect(byName["items.csv"]).toMatchObject({ outcome: "started" });
    expect(byName["invoice.pdf"]).toMatchObject({ outcome: "rejected", runIds: [], size: 19 });
    expect(byName["invoice.pdf"].reason).toBe("attachment format 'pdf' is not allowed (emailAllowedFormats: csv, json)");
    expect(byName["items.xml"].reason).toBe("attachment format 'xml' is not allowed (emailAllowedFormats: csv, json)");
    expect(byName.logo.reason).toBe("attachment format 'image/png' is not allowed (emailAllowedFormats: csv, json)");
    expect(await runCount(inbox.id)).toBe(1);
    // Only the accepted attachment is kept.
    const kept = (await h.svc.storage.list(spaceKey(ws.workspaceId, inbox.id, ""))).objects;
    expect(kept.map((o) => o.key.split("/").pop())).toEqual(["items.csv"]);
  });

  test("no active inbound pipeline: the arrival is ignored with the reason, and the file is kept in the space", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
    await createPipeline(h, ws, { connectionId: inbox.id, isActive: false });
    await sendMail(port, { to: inbox.address, attachments: CSV });
    const [arrival] = (await arrivals(h, ws, inbox.id)).data;
    expect(arrival).toMatchObject({ outcome: "ignored", reason: "the connection has no active inbound pipeline", filename: "items.csv", runIds: [] });
    const body = await h.svc.storage.get(spaceKey(ws.workspaceId, inbox.id, arrival.path));
    expect(await new Response(body!).text()).toBe(ITEMS_BY_FORMAT.csv!);
  });
});
