import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { arrivals, emailConnection, ITEMS_BY_FORMAT, sendMail } from "./helpers/email";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline } from "./helpers/runs";

/** The SMTP server starts with the service (src/main.ts) and stops cleanly with it: mail being received is finished first. */
const ROOT = join(import.meta.dir, "..");
let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});
afterAll(() => h.close());

/** A hand-driven SMTP session: send a line, read the reply. */
class Session {
  private buffer = "";
  private waiters: (() => void)[] = [];
  readonly closed: Promise<void>;
  private constructor(private readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      this.buffer += d;
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => socket.on("close", () => resolve()));
  }
  static async open(port: number): Promise<Session> {
    const s = new Session(connect(port, "127.0.0.1"));
    await s.reply();
    return s;
  }
  /** The next complete reply (its last line has a space after the code). */
  async reply(): Promise<string> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const m = /^(?:\d{3}-.*\r\n)*\d{3} .*\r\n/.exec(this.buffer);
      if (m) {
        this.buffer = this.buffer.slice(m[0].length);
        return m[0];
      }
      if (Date.now() > deadline) throw new Error(`no reply; buffer: ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }
  write(text: string) {
    this.socket.write(text);
  }
  async command(line: string): Promise<string> {
    this.write(`${line}\r\n`);
    return this.reply();
  }
}

test("close() lets a message being received finish (stored, run started, 250), then closes the connection with 421 and refuses new ones", async () => {
  const port = await h.service.smtp.listen(0, "127.0.0.1");
  expect(h.service.smtp.port).toBe(port);
  const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
  await createPipeline(h, ws, { connectionId: inbox.id });

  const s = await Session.open(port);
  expect(await s.command("EHLO partner.example")).toStartWith("250");
  expect(await s.command("MAIL FROM:<orders@partner.example>")).toStartWith("250");
  expect(await s.command(`RCPT TO:<${inbox.address}>`)).toStartWith("250");
  expect(await s.command("DATA")).toStartWith("354");
  s.write(
    [
      "From: orders@partner.example",
      `To: ${inbox.address}`,
      "Subject: half way",
      "MIME-Version: 1.0",
      'Content-Type: multipart/mixed; boundary="b"',
      "",
      "--b",
      "Content-Type: text/csv",
      'Content-Disposition: attachment; filename="items.csv"',
      "",
      "",
    ].join("\r\n"),
  );
  await Bun.sleep(100);
  // Stop while the message is half sent.
  let stopped = false;
  const closing = h.service.smtp.close().then(() => (stopped = true));
  await Bun.sleep(200);
  expect(stopped).toBe(false);
  // A new client is not served once the server is closing.
  const refused = await new Promise<string>((resolve) => {
    const c = connect(port, "127.0.0.1");
    c.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
    c.on("data", (d) => {
      resolve(String(d));
      c.destroy();
    });
  });
  expect(refused).toMatch(/ECONNREFUSED|^421/);

  s.write(`${ITEMS_BY_FORMAT.csv!.replace(/\n/g, "\r\n")}--b--\r\n.\r\n`);
  expect(await s.reply()).toStartWith("250");
  expect(await s.reply()).toStartWith("421");
  await s.closed;
  await closing;
  expect(stopped).toBe(true);

  const [arrival] = (await arrivals(h, ws, inbox.id)).data;
  expect(arrival).toMatchObject({ outcome: "started", filename: "items.csv", metadata: { subject: "half way" } });
  expect(arrival.runIds).toHaveLength(1);
});

async function linesOf(stream: ReadableStream<Uint8Array>, until: (line: Record<string, any>) => boolean): Promise<Record<string, any>[]> {
  const reader = stream.getReader();
  const lines: Record<string, any>[] = [];
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    let nl = text.indexOf("\n");
    while (nl >= 0) {
      lines.push(JSON.parse(text.slice(0, nl)));
      text = text.slice(nl + 1);
      nl = text.indexOf("\n");
    }
    if (lines.some(until)) break;
  }
  reader.releaseLock();
  return lines;
}

test("`npm start` listens on SMTP_PORT beside HTTP and SFTP, takes mail, and stops on SIGTERM with exit code 0", async () => {
  const inbox = await emailConnection(h, ws, { emailAllowedFormats: ["csv"] });
  await createPipeline(h, ws, { connectionId: inbox.id });
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...h.childEnv(), LOG_LEVEL: "info", PORT: "0", SFTP_PORT: "0", SMTP_PORT: "0", HOST: "127.0.0.1", SMTP_MAX_BYTES: "100000" },
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    const lines = await linesOf(proc.stdout, (l) => l.msg === "inbound SMTP server listening");
    expect(lines.some((l) => l.msg === "file pipeline service listening")).toBe(true);
    const smtp = lines.find((l) => l.msg === "inbound SMTP server listening")!;
    expect(smtp.maxBytes).toBe(100000);
    expect(smtp.smtpPort).toBeGreaterThan(0);
    const info = await sendMail(smtp.smtpPort, { to: inbox.address, attachments: [{ filename: "items.csv", content: ITEMS_BY_FORMAT.csv! }] });
    expect(info.response).toStartWith("250");
    const [arrival] = (await arrivals(h, ws, inbox.id)).data;
    expect(arrival).toMatchObject({ outcome: "started", filename: "items.csv" });
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
}, 30_000);
