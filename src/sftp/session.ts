import { type Attributes, type FileEntry, type SFTPWrapper, utils } from "ssh2";
import { AppError } from "../domain/errors";
import type { Logger } from "../logger";
import { clientPath, type ObjectReader, resolveClientPath, type SpaceEntry, type SpaceFiles, type SpaceWriter } from "../services/space-files";
import { transferred } from "../runtime/gc";
import { sftpStatus } from "./status";

const { OPEN_MODE, STATUS_CODE } = utils.sftp;

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
/** Largest READ answered in one DATA packet (OpenSSH accepts 256 KiB packets). */
const MAX_READ = 255 * 1024;
const MAX_HANDLES = 256;


type Handle =
  | { kind: "read"; path: string; reader: ObjectReader; chain: Promise<void> }
  | { kind: "write"; path: string; writer: SpaceWriter }
  | { kind: "dir"; path: string; pages: AsyncGenerator<SpaceEntry[]>; chain: Promise<void> };

/**
 * One SFTP subsystem channel of an authenticated hosted connection: SFTP
 * v3 requests answered over its file space. Paths are resolved inside the
 * chroot first (escapes are PERMISSION_DENIED); each request's outcome is
 * one status from the error table in status.ts. SETSTAT/FSETSTAT are
 * accepted and change nothing (the store keeps no modes or times);
 * symbolic links and extensions are not supported.
 */
export class SftpSession {
  private readonly handles = new Map<string, Handle>();
  private nextHandle = 1;
  private closed = false;
  /** Set by refuseOpens(): no new file is opened. */
  private stopping = false;
  /** A CLOSE was answered after the stop began: the client is likely to leave on its own in a moment. */
  answeredWhileStopping = false;
  /** CLOSE requests being answered; an upload's is storing the file and starting its runs. */
  private readonly closing = new Set<Promise<void>>();
  /** The uploads among them, aborted if the stop's grace runs out before they are stored. */
  private readonly storing = new Set<SpaceWriter>();

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly files: SpaceFiles,
    private readonly log: Logger,
  ) {
    // Without answering the client's end the OpenSSH client waits forever at exit.
    sftp.on("end", () => sftp.end());
    sftp.on("close", () => void this.dispose("the connection closed before the file was closed"));
    sftp.on("error", (err: Error) => this.log.debug({ err, connectionId: files.account.connectionId }, "sftp channel error"));

    sftp.on("REALPATH", (id, path) =>
      this.run(id, async () => {
        const resolved = clientPath(resolveClientPath(path));
        sftp.name(id, [{ filename: resolved, longname: resolved, attrs: {} as Attributes }]);
      }),
    );
    sftp.on("STAT", (id, path) => this.run(id, () => this.stat(id, path)));
    sftp.on("LSTAT", (id, path) => this.run(id, () => this.stat(id, path)));
    sftp.on("FSTAT", (id, handle) =>
      this.run(id, async () => {
        const h = this.handle(handle);
        if (h.kind === "write") sftp.attrs(id, fileAttrs(h.writer.size, new Date()));
        else if (h.kind === "read") sftp.attrs(id, fileAttrs(h.reader.size, new Date()));
        else sftp.attrs(id, folderAttrs(new Date()));
      }),
    );
    sftp.on("SETSTAT", (id, path) =>
      this.run(id, async () => {
        if (!(await files.stat(resolveClientPath(path)))) throw new AppError("not_found", `'${path}' does not exist`);
        this.ok(id);
      }),
    );
    sftp.on("FSETSTAT", (id, handle) => this.run(id, async () => (this.handle(handle), this.ok(id))));

    sftp.on("OPEN", (id, path, flags) => this.run(id, () => this.open(id, path, flags)));
    sftp.on("READ", (id, handle, offset, length) => this.read(id, handle, offset, length));
    sftp.on("WRITE", (id, handle, offset, data) => this.write(id, handle, offset, data));
    sftp.on("CLOSE", (id, handle) => {
      const answered = this.run(id, () => this.close(id, handle));
      this.closing.add(answered);
      void answered.finally(() => {
        this.closing.delete(answered);
        if (this.stopping) this.answeredWhileStopping = true;
      });
    });

    sftp.on("OPENDIR", (id, path) =>
      this.run(id, async () => {
        const p = resolveClientPath(path);
        const pages = files.list(p);
        // The first page proves the folder exists (or throws not_found) before a handle is handed out.
        const first = await pages.next();
        const replay = (async function* () {
          if (!first.done) yield first.value;
          yield* pages;
        })();
        sftp.handle(id, this.addHandle({ kind: "dir", path: p, pages: replay, chain: Promise.resolve() }));
      }),
    );
    sftp.on("READDIR", (id, handle) => this.readdir(id, handle));

    sftp.on("MKDIR", (id, path) =>
      this.run(id, async () => {
        await files.mkdir(resolveClientPath(path));
        this.ok(id);
      }),
    );
    sftp.on("RMDIR", (id, path) =>
      this.run(id, async () => {
        await files.rmdir(resolveClientPath(path));
        this.ok(id);
      }),
    );
    sftp.on("REMOVE", (id, path) =>
      this.run(id, async () => {
        await files.remove(resolveClientPath(path));
        this.ok(id);
      }),
    );
    sftp.on("RENAME", (id, from, to) =>
      this.run(id, async () => {
        await files.rename(resolveClientPath(from), resolveClientPath(to));
        this.ok(id);
      }),
    );
  }

  /**
   * The server is stopping (HostedSftpServer.close): no file is opened any
   * more; other requests, CLOSEs above all, are still answered until end().
   */
  refuseOpens(): void {
    this.stopping = true;
  }

  /** Settles when the CLOSEs being answered now have answered; null when there are none. */
  closingsInProgress(): Promise<unknown> | null {
    return this.closing.size > 0 ? Promise.allSettled([...this.closing]) : null;
  }

  /** The end of a stop: disposes the session, and aborts a close still storing its file (the stop's grace ran out). */
  async end(): Promise<void> {
    const late = [...this.storing];
    await this.dispose();
    await Promise.all(late.map((w) => w.abort("the server is stopping").catch(() => {})));
  }

  /** Ends every open handle: uploads not closed by the client are aborted (nothing stored, nothing started). */
  async dispose(reason = "the server is stopping"): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const handles = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(
      handles.map(async (h) => {
        if (h.kind === "write") {
          await h.writer.abort(reason);
          this.log.info({ event: "sftp.upload", connectionId: this.files.account.connectionId, path: h.path, outcome: "aborted", reason }, "sftp upload aborted");
        } else if (h.kind === "read") await h.reader.close();
        else await h.pages.return(undefined).catch(() => {});
      }),
    );
  }

  private async stat(id: number, path: string): Promise<void> {
    const entry = await this.files.stat(resolveClientPath(path));
    if (!entry) throw new AppError("not_found", `'${path}' does not exist`);
    this.sftp.attrs(id, attrsOf(entry));
  }

  private async open(id: number, path: string, flags: number): Promise<void> {
    if (this.stopping) throw new AppError("unavailable", "the server is stopping; connect again in a moment");
    const p = resolveClientPath(path);
    if (flags & OPEN_MODE.WRITE) {
      const writer = await this.files.openWrite(p, {
        create: (flags & OPEN_MODE.CREAT) !== 0,
        truncate: (flags & OPEN_MODE.TRUNC) !== 0,
        exclusive: (flags & OPEN_MODE.EXCL) !== 0,
        append: (flags & OPEN_MODE.APPEND) !== 0,
      });
      this.sftp.handle(id, this.addHandle({ kind: "write", path: p, writer }));
      return;
    }
    const reader = await this.files.openRead(p);
    this.sftp.handle(id, this.addHandle({ kind: "read", path: p, reader, chain: Promise.resolve() }));
  }

  private read(id: number, handle: Buffer, offset: number, length: number): void {
    const h = this.handles.get(handle.toString("hex"));
    if (!h || h.kind !== "read") return this.fail(id, new AppError("invalid_input", h ? "the handle is not open for reading" : "no such handle"));
    // Requests on one handle are answered in order: the reader streams forward.
    h.chain = h.chain.then(() =>
      this.run(id, async () => {
        const data = await h.reader.read(offset, Math.min(length, MAX_READ));
        if (!data) this.sftp.status(id, STATUS_CODE.EOF);
        else {
          transferred(data.byteLength);
          this.sftp.data(id, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
        }
      }),
    );
  }

  private write(id: number, handle: Buffer, offset: number, data: Buffer): void {
    const h = this.handles.get(handle.toString("hex"));
    if (!h || h.kind !== "write") return this.fail(id, new AppError("invalid_input", h ? "the handle is not open for writing" : "no such handle"));
    transferred(data.byteLength);
    // Called at once, in arrival order: the answer waits only while storage is behind.
    h.writer.write(offset, data).then(
      () => this.ok(id),
      (e) => this.fail(id, e),
    );
  }

  private readdir(id: number, handle: Buffer): void {
    const h = this.handles.get(handle.toString("hex"));
    if (!h || h.kind !== "dir") return this.fail(id, new AppError("invalid_input", "no such directory handle"));
    h.chain = h.chain.then(() =>
      this.run(id, async () => {
        const page = await h.pages.next();
        if (page.done) return this.sftp.status(id, STATUS_CODE.EOF);
        this.sftp.name(id, page.value.map(nameOf));
      }),
    );
  }

  private async close(id: number, handle: Buffer): Promise<void> {
    const key = handle.toString("hex");
    const h = this.handles.get(key);
    if (!h) throw new AppError("invalid_input", "no such handle");
    this.handles.delete(key);
    if (h.kind === "write") {
      this.storing.add(h.writer);
      try {
        await h.writer.close();
      } catch (e) {
        await h.writer.abort().catch(() => {});
        this.log.info({ event: "sftp.upload", connectionId: this.files.account.connectionId, path: h.path, outcome: "failed", reason: (e as Error).message }, "sftp upload failed");
        throw e;
      } finally {
        this.storing.delete(h.writer);
      }
    } else if (h.kind === "read") {
      await h.chain;
      await h.reader.close();
    } else {
      await h.chain;
      await h.pages.return(undefined);
    }
    this.ok(id);
  }

  private addHandle(h: Handle): Buffer {
    if (this.handles.size >= MAX_HANDLES) {
      if (h.kind === "write") void h.writer.abort("too many open handles");
      else if (h.kind === "read") void h.reader.close();
      throw new AppError("rate_limited", `at most ${MAX_HANDLES} open handles per session`);
    }
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(this.nextHandle++ >>> 0);
    this.handles.set(buf.toString("hex"), h);
    return buf;
  }

  private handle(handle: Buffer): Handle {
    const h = this.handles.get(handle.toString("hex"));
    if (!h) throw new AppError("invalid_input", "no such handle");
    return h;
  }

  private ok(id: number): void {
    if (!this.closed) this.sftp.status(id, STATUS_CODE.OK);
  }

  private fail(id: number, e: unknown): void {
    const { code, message, expected } = sftpStatus(e);
    if (!expected) this.log.error({ err: e, connectionId: this.files.account.connectionId }, "sftp request failed");
    if (!this.closed) this.sftp.status(id, code, message);
  }

  /** Runs one request; any error becomes its status answer. */
  private async run(id: number, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (e) {
      this.fail(id, e);
    }
  }
}

function fileAttrs(size: number, modifiedAt: Date): Attributes {
  const t = Math.floor(modifiedAt.getTime() / 1000);
  return { mode: S_IFREG | 0o644, uid: 0, gid: 0, size, atime: t, mtime: t };
}

function folderAttrs(modifiedAt: Date): Attributes {
  const t = Math.floor(modifiedAt.getTime() / 1000);
  return { mode: S_IFDIR | 0o755, uid: 0, gid: 0, size: 0, atime: t, mtime: t };
}

function attrsOf(e: SpaceEntry): Attributes {
  return e.kind === "folder" ? folderAttrs(e.modifiedAt) : fileAttrs(e.size, e.modifiedAt);
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** An `ls -l` line, which clients show for `ls -l`. */
function nameOf(e: SpaceEntry): FileEntry {
  const d = e.modifiedAt;
  const date = `${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, " ")} ${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
  const mode = e.kind === "folder" ? "drwxr-xr-x" : "-rw-r--r--";
  const longname = `${mode}    1 sftp     sftp     ${String(e.size).padStart(12, " ")} ${date} ${e.name}`;
  return { filename: e.name, longname, attrs: attrsOf(e) };
}
