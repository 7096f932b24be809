import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { AddressObject, AttachmentStream, MessageText } from "mailparser";
import type { ServiceContext } from "../../../context";
import { type ArrivalRow, ingest, recordArrival } from "../../ingest";
import { INBOUND_FOLDER, normalizeSpacePath, spaceKey } from "../../../spaces";
import { findInboxes, type Inbox } from "./inboxes";
import { attachmentFormat, attachmentName, type FileFormat, formatsList, senderAllowed, subjectMatches } from "./rules";

/** Where accepted attachments are kept in the connection's space: `inbound/email/<day>/<message>/<name>`. */
export const EMAIL_FOLDER = `${INBOUND_FOLDER}/email`;

const MAX_SUBJECT_IN_METADATA = 300;

export interface ReceiveEmailOptions {
  /** The envelope recipients (SMTP `RCPT TO`); those that are no inbox are skipped. */
  recipients: readonly string[];
  /** The envelope sender (SMTP `MAIL FROM`), `null` for the null sender `<>`. */
  mailFrom: string | null;
  /** The raw RFC 5322 message, read to its end whatever happens. */
  message: AsyncIterable<Uint8Array>;
  /** Largest message accepted; a larger one is recorded as rejected and nothing of it is kept. */
  maxBytes: number;
  /** A folder for the message while it is parsed (removed after); the message is never held in memory whole. */
  spoolDir: string;
  /** The sending host's address, kept with the arrival. */
  remoteAddress?: string;
}

export interface EmailReceipt {
  /** The inboxes the message was for (0 when every recipient had gone by the time the message arrived). */
  inboxes: number;
  tooLarge: boolean;
  /** Bytes of the message read (up to the limit, then counted without keeping). */
  size: number;
  arrivals: ArrivalRow[];
  runIds: string[];
}

interface MailFacts {
  /** The `From:` header's first address, else the envelope sender; lower case. */
  sender: string | null;
  envelopeFrom: string | null;
  subject: string;
  messageId: string | null;
}

interface Attachment {
  index: number;
  name: string;
  contentType: string;
  format: FileFormat | null;
  /** What the format rule names when it refuses the attachment (extension or content type). */
  shown: string;
  size: number;
  sha256: string;
  /** Space path and object key per inbox that kept it. */
  kept: Map<string, { path: string; key: string }>;
}

/**
 * Receives one message for the inboxes among its recipients and applies each
 * inbox's rules (sender, subject, attachment formats). Every accepted
 * attachment is kept in the inbox's space and starts a run on each active
 * inbound pipeline; everything that starts nothing is recorded as an arrival
 * with the reason. Knows nothing of SMTP: the transport hands over the
 * envelope and the message bytes, and maps `tooLarge` / `inboxes: 0` to its
 * replies.
 */
export async function receiveEmail(ctx: ServiceContext, opts: ReceiveEmailOptions): Promise<EmailReceipt> {
  const inboxes = await findInboxes(ctx, opts.recipients);
  const envelopeFrom = opts.mailFrom ? opts.mailFrom.toLowerCase() : null;
  await mkdir(opts.spoolDir, { recursive: true });
  const spool = join(opts.spoolDir, `${Date.now()}-${randomBytes(8).toString("hex")}.eml`);
  try {
    const size = await spoolMessage(opts.message, spool, inboxes.length > 0 ? opts.maxBytes : 0);
    const receipt: EmailReceipt = { inboxes: inboxes.length, tooLarge: size > opts.maxBytes, size, arrivals: [], runIds: [] };
    if (inboxes.length === 0) return receipt;
    if (receipt.tooLarge) {
      for (const inbox of inboxes) {
        receipt.arrivals.push(
          await recordArrival(ctx, {
            workspaceId: inbox.workspaceId,
            connectionId: inbox.id,
            transport: "email",
            size,
            outcome: "rejected",
            reason: `the message is larger than the ${opts.maxBytes}-byte limit (SMTP_MAX_BYTES); nothing of it was kept`,
            metadata: metadataOf(inbox, { sender: envelopeFrom, envelopeFrom, subject: "", messageId: null }, opts.remoteAddress),
          }),
        );
      }
      return receipt;
    }
    await processMessage(ctx, inboxes, spool, envelopeFrom, opts.remoteAddress, receipt);
    return receipt;
  } finally {
    await rm(spool, { force: true });
  }
}

/** Writes the message to `path` up to `maxBytes` and reads the rest without keeping it; answers the whole size. */
async function spoolMessage(message: AsyncIterable<Uint8Array>, path: string, maxBytes: number): Promise<number> {
  const file = await open(path, "w", 0o600);
  let size = 0;
  try {
    for await (const chunk of message) {
      size += chunk.byteLength;
      if (size <= maxBytes) await file.write(chunk);
    }
  } finally {
    await file.close();
  }
  return size;
}

/** Why an inbox refuses the message as a whole, or null when its sender and subject rules pass. */
function mailRefusal(inbox: Inbox, mail: MailFacts): string | null {
  if (!senderAllowed(mail.sender, inbox.emailAllowedSenders)) {
    return mail.sender
      ? `sender '${mail.sender}' is not allowed (emailAllowedSenders: ${formatsList(inbox.emailAllowedSenders)})`
      : "the message names no sender, and the inbox allows only some (emailAllowedSenders)";
  }
  if (!subjectMatches(mail.subject, inbox.emailSubjectFilter)) {
    return `subject '${mail.subject.slice(0, 200)}' does not contain '${inbox.emailSubjectFilter}' (emailSubjectFilter)`;
  }
  return null;
}

function accepts(inbox: Inbox, format: FileFormat | null): boolean {
  return format !== null && (inbox.emailAllowedFormats ?? []).includes(format);
}

async function processMessage(
  ctx: ServiceContext,
  inboxes: Inbox[],
  spool: string,
  envelopeFrom: string | null,
  remoteAddress: string | undefined,
  receipt: EmailReceipt,
): Promise<void> {
  const { mail, attachments, refusals } = await parseAndKeep(ctx, inboxes, spool, envelopeFrom);
  for (const inbox of inboxes) {
    const metadata = metadataOf(inbox, mail, remoteAddress);
    const base = { workspaceId: inbox.workspaceId, connectionId: inbox.id, transport: "email" as const, metadata };
    const refusal = refusals.get(inbox.id);
    if (refusal) {
      receipt.arrivals.push(
        await recordArrival(ctx, {
          ...base,
          outcome: "rejected",
          reason: refusal,
          size: receipt.size,
          metadata: { ...metadata, attachments: attachments.map((a) => a.name) },
        }),
      );
      continue;
    }
    if (attachments.length === 0) {
      receipt.arrivals.push(await recordArrival(ctx, { ...base, outcome: "ignored", reason: "the message has no attachment", size: receipt.size }));
      continue;
    }
    for (const a of attachments) {
      const kept = a.kept.get(inbox.id);
      if (!kept) {
        receipt.arrivals.push(
          await recordArrival(ctx, {
            ...base,
            filename: a.name,
            size: a.size,
            outcome: "rejected",
            reason: `attachment format '${a.shown}' is not allowed (emailAllowedFormats: ${formatsList(inbox.emailAllowedFormats)})`,
          }),
        );
        continue;
      }
      const result = await ingest(ctx, {
        door: "email",
        workspaceId: inbox.workspaceId,
        connectionId: inbox.id,
        filename: a.name,
        path: kept.path,
        size: a.size,
        mimetype: a.contentType,
        // Opened on first read: a start that reads nothing (a retried message's runs exist already) holds no file open.
        openBody: async () => lazyObject(ctx, kept.key),
        // A sender that retries a message it already delivered (same Message-ID, same attachment) gets the runs it started.
        idempotencyKey: mail.messageId ? `email:${digest(mail.messageId, inbox.id, String(a.index), a.sha256)}` : undefined,
        metadata: { ...metadata, attachment: a.name },
      });
      receipt.arrivals.push(result.arrival);
      receipt.runIds.push(...result.runIds);
    }
  }
}

/**
 * Parses the spooled message once for every inbox: decides each inbox's
 * sender/subject verdict from the headers, and streams each attachment that
 * at least one inbox takes into that inbox's space (copied to the others);
 * attachments nobody takes are read and counted, never stored.
 */
async function parseAndKeep(
  ctx: ServiceContext,
  inboxes: Inbox[],
  spool: string,
  envelopeFrom: string | null,
): Promise<{ mail: MailFacts; attachments: Attachment[]; refusals: Map<string, string> }> {
  // Loaded with the first mail: ~4 MB of heap (and its html and MIME libraries) that a service receiving no mail never needs.
  const { MailParser } = await import("mailparser");
  const parser = new MailParser({ skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true, keepCidLinks: true });
  const attachments: Attachment[] = [];
  const refusals = new Map<string, string>();
  const taken = new Set<string>();
  let mail: MailFacts = { sender: envelopeFrom, envelopeFrom, subject: "", messageId: null };
  let folder = "";
  let failure: unknown = null;

  parser.on("headers", (headers) => {
    const from = headers.get("from") as AddressObject | undefined;
    const fromAddress = from?.value?.find((a) => a.address)?.address ?? null;
    const messageId = headers.get("message-id");
    mail = {
      sender: fromAddress ? fromAddress.toLowerCase() : envelopeFrom,
      envelopeFrom,
      subject: typeof headers.get("subject") === "string" ? (headers.get("subject") as string) : "",
      messageId: typeof messageId === "string" && messageId.trim() ? messageId.trim() : null,
    };
    for (const inbox of inboxes) {
      const refusal = mailRefusal(inbox, mail);
      if (refusal) refusals.set(inbox.id, refusal);
    }
    const day = ctx.clock.now().toISOString().slice(0, 10);
    const id = mail.messageId ? digest(mail.messageId).slice(0, 16) : randomBytes(8).toString("hex");
    folder = `${EMAIL_FOLDER}/${day}/${id}`;
  });

  parser.on("data", (part: AttachmentStream | MessageText) => {
    if (part.type !== "attachment") return;
    const index = attachments.length + 1;
    const { format, shown } = attachmentFormat(part.filename, part.contentType);
    const takers = inboxes.filter((i) => !refusals.has(i.id) && accepts(i, format));
    const a: Attachment = {
      index,
      name: attachmentName(part.filename, index, format, taken),
      contentType: part.contentType || "application/octet-stream",
      format,
      shown,
      size: 0,
      sha256: "",
      kept: new Map(),
    };
    attachments.push(a);
    const content = part.content as Readable;
    keepAttachment(ctx, a, content, takers, folder)
      .catch((e) => {
        failure ??= e;
        content.resume();
      })
      .finally(() => part.release());
  });

  await new Promise<void>((resolve, reject) => {
    parser.on("end", () => resolve());
    parser.on("error", reject);
    const input = createReadStream(spool);
    input.on("error", reject);
    input.pipe(parser);
  });
  if (failure) {
    await Promise.all(attachments.flatMap((a) => [...a.kept.values()].map((k) => ctx.storage.delete(k.key).catch(() => {}))));
    throw failure;
  }
  return { mail, attachments, refusals };
}

/** Streams one attachment into the first taker's space (counting and hashing it), then copies it to the other takers'. */
async function keepAttachment(ctx: ServiceContext, a: Attachment, content: Readable, takers: Inbox[], folder: string): Promise<void> {
  const hash = createHash("sha256");
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of content as AsyncIterable<Buffer>) {
      a.size += chunk.byteLength;
      hash.update(chunk);
      yield chunk;
    }
  }
  if (takers.length === 0) {
    for await (const _ of counted());
    a.sha256 = hash.digest("hex");
    return;
  }
  const path = normalizeSpacePath(`${folder}/${a.name}`, "attachment");
  const [first, ...others] = takers;
  const firstKey = spaceKey(first!.workspaceId, first!.id, path);
  await ctx.storage.put(firstKey, counted(), { contentType: a.contentType });
  a.kept.set(first!.id, { path, key: firstKey });
  a.sha256 = hash.digest("hex");
  for (const inbox of others) {
    const key = spaceKey(inbox.workspaceId, inbox.id, path);
    await ctx.storage.copy(firstKey, key);
    a.kept.set(inbox.id, { path, key });
  }
}

async function* lazyObject(ctx: ServiceContext, key: string): AsyncGenerator<Uint8Array> {
  const body = await ctx.storage.get(key);
  if (!body) throw new Error(`kept attachment ${key} is missing`);
  yield* body as unknown as AsyncIterable<Uint8Array>;
}

function metadataOf(inbox: Inbox, mail: MailFacts, remoteAddress: string | undefined): Record<string, unknown> {
  const m: Record<string, unknown> = {
    sender: mail.sender,
    envelopeFrom: mail.envelopeFrom,
    subject: mail.subject.slice(0, MAX_SUBJECT_IN_METADATA),
    messageId: mail.messageId,
    recipient: inbox.emailInboundAddress,
  };
  if (remoteAddress) m.remoteAddress = remoteAddress;
  return m;
}

function digest(...parts: string[]): string {
  return createHash("sha256").update(parts.join("\u0000")).digest("hex");
}
