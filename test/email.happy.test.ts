import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spaceKey } from "../src/services/spaces";
import { arrivals, emailConnection, ITEMS_BY_FORMAT, sendMail, startSmtp } from "./helpers/email";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, waitForRun } from "./helpers/runs";

/** Real mail over SMTP (nodemailer) to the service's own server: attachments become runs. */
let h: Harness;
let ws: TestWorkspace;
let port: number;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  port = await startSmtp(h);
});
afterAll(() => h.close());

async function text(key: string): Promise<string> {
  const body = await h.svc.storage.get(key);
  expect(body, `object ${key}`).not.toBeNull();
  return new Response(body!).text();
}

describe("e-mail inbox", () => {
  test("an attachment of each allowed format starts a run that completes; the file is kept in the connection's space", async () => {
    const inbox = await emailConnection(h, ws);
    const { pipeline } = await createPipeline(h, ws, { connectionId: inbox.id });
    for (const [format, content] of Object.entries(ITEMS_BY_FORMAT)) {
      const messageId = `<items-${format}@partner.example>`;
      const info = await sendMail(port, {
        to: inbox.address,
        subject: `Items as ${format}`,
        messageId,
        attachments: [{ filename: `items.${format}`, content }],
      });
      expect(info.accepted).toEqual([inbox.address]);
      expect(info.response).toStartWith("250");

      const [arrival] = (await arrivals(h, ws, inbox.id)).data;
      expect(arrival).toMatchObject({ transport: "email", outcome: "started", filename: `items.${format}`, size: Buffer.byteLength(content) });
      expect(arrival.runIds).toHaveLength(1);
      expect(arrival.metadata).toMatchObject({
        sender: "orders@partner.example",
        envelopeFrom: "orders@partner.example",
        subject: `Items as ${format}`,
        messageId,
        recipient: inbox.address,
      });
      expect(arrival.path).toMatch(new RegExp(`^inbound/email/\\d{4}-\\d{2}-\\d{2}/[0-9a-f]{16}/items\\.${format}$`));
      expect(await text(spaceKey(ws.workspaceId, inbox.id, arrival.path))).toBe(content);
      const folder = arrival.path.slice(0, arrival.path.lastIndexOf("/"));
      const listed = await h.ok(ws, "GET", `/documents?connectionId=${inbox.id}&path=${encodeURIComponent(folder)}`);
      expect(JSON.stringify(listed)).toContain(`items.${format}`);

      const run = await waitForRun(h, ws, arrival.runIds[0], ["completed", "failed"]);
      expect(run.status, `${format}: ${run.errorMessage}`).toBe("completed");
      expect(run).toMatchObject({ pipelineId: pipeline.id, filename: `items.${format}`, clientId: inbox.id, path: arrival.path });
      expect(run.metadata.source).toBe("email");
      expect(run.metadata.rows).toMatchObject({ total: 3, valid: 3, invalid: 0 });
      expect(run.metadata.arrival).toMatchObject({ sender: "orders@partner.example", subject: `Items as ${format}`, messageId, attachment: `items.${format}` });
    }
  });

  test("a mail with two attachments starts two runs on each of two active pipelines; an inactive pipeline gets none", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv", "json"] });
    const first = await createPipeline(h, ws, { connectionId: inbox.id });
    const second = await createPipeline(h, ws, { connectionId: inbox.id });
    await createPipeline(h, ws, { connectionId: inbox.id, isActive: false });
    await sendMail(port, {
      to: inbox.address,
      attachments: [
        { filename: "north.csv", content: ITEMS_BY_FORMAT.csv! },
        { filename: "south.json", content: ITEMS_BY_FORMAT.json! },
      ],
    });
    const { data } = await arrivals(h, ws, inbox.id);
    expect(data.map((a) => [a.filename, a.outcome, a.runIds.length]).sort()).toEqual([
      ["north.csv", "started", 2],
      ["south.json", "started", 2],
    ]);
    const runs = await Promise.all(data.flatMap((a) => a.runIds.map((id: string) => waitForRun(h, ws, id, ["completed", "failed"]))));
    expect(runs.map((r) => r.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expect(runs.map((r) => `${r.pipelineId}:${r.filename}`).sort()).toEqual(
      [`${first.pipeline.id}:north.csv`, `${first.pipeline.id}:south.json`, `${second.pipeline.id}:north.csv`, `${second.pipeline.id}:south.json`].sort(),
    );
  });

  test("one message to two inboxes (two workspaces) is handled by each inbox's own rules; an unknown recipient among them is refused alone", async () => {
    const other = await h.workspace({ name: "Globex" });
    const a = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
    const b = await emailConnection(h, other, { emailAllowedFormats: ["csv"], emailAllowedSenders: ["@elsewhere.example"] });
    await createPipeline(h, ws, { connectionId: a.id });
    await createPipeline(h, other, { connectionId: b.id });
    const unknown = `nobody-123456@${a.address.split("@")[1]}`;
    const info = await sendMail(port, { to: [a.address, unknown, b.address], attachments: [{ filename: "items.csv", content: ITEMS_BY_FORMAT.csv! }] });
    expect(info.accepted.sort()).toEqual([a.address, b.address].sort());
    expect(info.rejected).toEqual([unknown]);

    const [atA] = (await arrivals(h, ws, a.id)).data;
    expect(atA).toMatchObject({ outcome: "started", filename: "items.csv" });
    expect((await waitForRun(h, ws, atA.runIds[0], ["completed", "failed"])).status).toBe("completed");
    const [atB] = (await arrivals(h, other, b.id)).data;
    expect(atB).toMatchObject({ outcome: "rejected", runIds: [] });
    expect(atB.reason).toContain("sender 'orders@partner.example' is not allowed");
    // Each workspace sees only its own connection's arrivals.
    expect((await h.api(ws, "GET", `/connections/${b.id}/arrivals`)).status).toBe(404);
  });

  test("allowed senders match exact addresses and whole domains; the subject filter is a case-insensitive substring", async () => {
    const inbox = await emailConnection(h, ws, {
      emailAllowedFormats: ["csv"],
      emailAllowedSenders: ["ops@acme.example", "@partner.example", "*@globex.example"],
      emailSubjectFilter: "Daily ITEMS",
    });
    await createPipeline(h, ws, { connectionId: inbox.id });
    const file = [{ filename: "items.csv", content: ITEMS_BY_FORMAT.csv! }];
    for (const from of ["OPS@acme.example", "anyone@partner.example", "Someone <x@globex.example>"]) {
      await sendMail(port, { from, to: inbox.address, subject: "Re: daily items for Monday", attachments: file });
    }
    const { data } = await arrivals(h, ws, inbox.id);
    expect(data.map((a) => a.outcome)).toEqual(["started", "started", "started"]);
    expect(data.map((a) => a.metadata.sender).sort()).toEqual(["anyone@partner.example", "ops@acme.example", "x@globex.example"]);
  });

  test("the sender rule reads the From header; the envelope sender (a bounce address) does not count", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"], emailAllowedSenders: ["orders@partner.example"] });
    await createPipeline(h, ws, { connectionId: inbox.id });
    const file = [{ filename: "items.csv", content: ITEMS_BY_FORMAT.csv! }];
    await sendMail(port, { from: "orders@partner.example", envelope: { from: "bounces+123@mailer.example", to: [inbox.address] }, to: inbox.address, attachments: file });
    await sendMail(port, { from: "intruder@mailer.example", envelope: { from: "orders@partner.example", to: [inbox.address] }, to: inbox.address, attachments: file });
    const { data } = await arrivals(h, ws, inbox.id);
    expect(data.map((a) => [a.metadata.sender, a.metadata.envelopeFrom, a.outcome])).toEqual([
      ["intruder@mailer.example", "orders@partner.example", "rejected"],
      ["orders@partner.example", "bounces+123@mailer.example", "started"],
    ]);
  });

  test("a message delivered again (same Message-ID and attachment, as a sending server retries) starts no second run", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
    await createPipeline(h, ws, { connectionId: inbox.id });
    const mail = { to: inbox.address, messageId: "<retry-1@partner.example>", attachments: [{ filename: "items.csv", content: ITEMS_BY_FORMAT.csv! }] };
    await sendMail(port, mail);
    await sendMail(port, mail);
    // A new message (new Message-ID) with the same file is a new delivery.
    await sendMail(port, { ...mail, messageId: "<retry-2@partner.example>" });
    const { data } = await arrivals(h, ws, inbox.id);
    expect(data).toHaveLength(3);
    const [third, second, first] = data;
    expect(second.runIds).toEqual(first.runIds);
    expect(third.runIds).not.toEqual(first.runIds);
    const runs = await h.ok(ws, "GET", `/pipeline-runs?clientId=${inbox.id}`);
    expect(runs.data ?? runs).toHaveLength(2);
  });

  test("attachment names: path parts dropped, a missing name made from the content type, repeated names told apart", async () => {
    const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
    await createPipeline(h, ws, { connectionId: inbox.id });
    const part = (disposition: string) =>
      ["--b1", "Content-Type: text/csv", `Content-Disposition: ${disposition}`, "", ITEMS_BY_FORMAT.csv!.trimEnd(), ""].join("\r\n");
    const raw = [
      "From: orders@partner.example",
      `To: ${inbox.address}`,
      "Subject: raw",
      "Message-ID: <raw-names@partner.example>",
      "MIME-Version: 1.0",
      'Content-Type: multipart/mixed; boundary="b1"',
      "",
      "--b1",
      "Content-Type: text/plain",
      "",
      "three files",
      part('attachment; filename="../../etc/items.csv"'),
      part('attachment; filename="items.csv"'),
      part("attachment"),
      part('attachment; filename=".hidden.csv"'),
      "--b1--",
      "",
    ].join("\r\n");
    await sendMail(port, { to: inbox.address, raw });
    const { data } = await arrivals(h, ws, inbox.id);
    expect(data.map((a) => a.filename).sort()).toEqual(["attachment-3.csv", "hidden.csv", "items (2).csv", "items.csv"]);
    expect(data.every((a) => a.outcome === "started" && a.path.startsWith("inbound/email/") && a.path.endsWith(`/${a.filename}`))).toBe(true);
  });
});
