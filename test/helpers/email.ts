import { expect } from "bun:test";
import nodemailer from "nodemailer";
import type { Harness, TestWorkspace } from "./harness";

/** The inbound SMTP server of a harness's service, listening on a free loopback port. */
export async function startSmtp(h: Harness): Promise<number> {
  return h.service.smtp.listen(0, "127.0.0.1");
}

export interface Mail {
  from?: string;
  to: string | string[];
  subject?: string;
  text?: string;
  /** Envelope overrides (MAIL FROM / RCPT TO) when they differ from the headers. */
  envelope?: { from?: string; to?: string[] };
  attachments?: { filename?: string; content: string | Buffer; contentType?: string }[];
  messageId?: string;
  headers?: Record<string, string>;
  /** A whole RFC 5322 message sent as it is (headers above are then ignored). */
  raw?: string;
}

/** Sends one message over SMTP with nodemailer, as a partner's mail server would; answers nodemailer's result (throws its error). */
export async function sendMail(port: number, mail: Mail) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  try {
    return await transport.sendMail({ from: "Orders <orders@partner.example>", subject: "Daily items", text: "Files attached.", ...mail });
  } finally {
    transport.close();
  }
}

/** Sends and expects the SMTP error; answers it (responseCode, response). */
export async function sendMailRefused(port: number, mail: Mail): Promise<{ responseCode: number; response: string; message: string }> {
  try {
    await sendMail(port, mail);
  } catch (e) {
    return e as { responseCode: number; response: string; message: string };
  }
  throw new Error("the message was accepted");
}

/** An EMAIL connection (defaults: every format, no sender or subject rule); answers it with its inbound address. */
export async function emailConnection(h: Harness, ws: TestWorkspace, fields: Record<string, unknown> = {}) {
  const c = await h.ok(ws, "POST", "/connections", {
    name: `Inbox ${Math.random().toString(36).slice(2, 8)}`,
    type: "EMAIL",
    emailAllowedFormats: ["csv", "tsv", "json", "ndjson", "xml", "txt"],
    ...fields,
  });
  expect(c.emailInbox.inboundAddress).toContain("@");
  return { ...c, address: c.emailInbox.inboundAddress as string };
}

/** `GET /connections/{id}/arrivals` expecting 200. */
export async function arrivals(h: Harness, ws: TestWorkspace, connectionId: string, query = ""): Promise<{ data: any[]; pagination: any }> {
  return h.ok(ws, "GET", `/connections/${connectionId}/arrivals${query ? `?${query}` : ""}`);
}

/** The same rows in each format the engine reads, for the ITEM schema and mappings of helpers/runs.ts. */
export const ITEMS_BY_FORMAT: Record<string, string> = {
  csv: "SKU,Qty,Name\na-1,3, Bolt \nb-2,10,Nut\nc-3,7,Washer\n",
  tsv: "SKU\tQty\tName\na-1\t3\tBolt\nb-2\t10\tNut\nc-3\t7\tWasher\n",
  txt: "SKU,Qty,Name\na-1,3,Bolt\nb-2,10,Nut\nc-3,7,Washer\n",
  json: JSON.stringify([
    { SKU: "a-1", Qty: 3, Name: "Bolt" },
    { SKU: "b-2", Qty: 10, Name: "Nut" },
    { SKU: "c-3", Qty: 7, Name: "Washer" },
  ]),
  ndjson: '{"SKU":"a-1","Qty":3,"Name":"Bolt"}\n{"SKU":"b-2","Qty":10,"Name":"Nut"}\n{"SKU":"c-3","Qty":7,"Name":"Washer"}\n',
  xml: '<?xml version="1.0"?>\n<items><item><SKU>a-1</SKU><Qty>3</Qty><Name>Bolt</Name></item><item><SKU>b-2</SKU><Qty>10</Qty><Name>Nut</Name></item><item><SKU>c-3</SKU><Qty>7</Qty><Name>Washer</Name></item></items>\n',
};
