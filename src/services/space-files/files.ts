import type { ObjectInfo } from "../../adapters/storage/port";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../context";
import type { HostedAccount } from "../sftp-accounts";
import { spaceKey, spacePrefix } from "../spaces";
import { enqueueArrival } from "../run-path/doors/space-arrival";
import { baseName, FIXED_FOLDERS, FOLDER_MARKER, isArrivalPath, parentOf } from "./paths";
import { ObjectReader } from "./reader";
import { SpaceUpload } from "./upload";

export interface SpaceEntry {
  /** Space path (`inbound/orders.csv`); `""` is the root. */
  path: string;
  name: string;
  kind: "file" | "folder";
  size: number;
  modifiedAt: Date;
}

export interface OpenWriteOptions {
  /** Create the file when missing (otherwise a missing file is not_found). */
  create: boolean;
  /** Start from empty even when the file exists. */
  truncate: boolean;
  /** Fail when the file exists. */
  exclusive: boolean;
  /** Every write lands at the end. */
  append: boolean;
}

/** The handle of a file being written; close() stores it, and hands it to pipelines when it is an arrival. */
export interface SpaceWriter {
  readonly path: string;
  readonly size: number;
  write(offset: number, data: Uint8Array): Promise<void>;
  close(): Promise<ObjectInfo | null>;
  abort(reason?: string): Promise<void>;
}

const LIST_PAGE = 200;

/**
 * One hosted connection's file space as a file system, for the hosted SFTP
 * server: folders are key prefixes (plus a marker object for a folder made
 * empty), files are objects, and `inbound` and `outbound` always exist.
 * Paths are space paths from `resolveClientPath`; nothing here can name a
 * key outside the space. Knows no SSH.
 */
export class SpaceFiles {
  constructor(
    private readonly ctx: ServiceContext,
    readonly account: HostedAccount,
  ) {}

  private key(path: string): string {
    return spaceKey(this.account.workspaceId, this.account.connectionId, path);
  }

  private folderPrefix(path: string): string {
    return path === "" ? spacePrefix(this.account.workspaceId, this.account.connectionId) : `${this.key(path)}/`;
  }

  private get storage() {
    return this.ctx.storage;
  }

  async stat(path: string): Promise<SpaceEntry | null> {
    if (path === "" || FIXED_FOLDERS.includes(path)) return this.folderEntry(path);
    const info = await this.storage.stat(this.key(path));
    if (info) return this.fileEntry(path, info);
    return (await this.isFolder(path)) ? this.folderEntry(path) : null;
  }

  async isFolder(path: string): Promise<boolean> {
    if (path === "" || FIXED_FOLDERS.includes(path)) return true;
    const page = await this.storage.list(this.folderPrefix(path), { limit: 1 });
    return page.objects.length > 0 || page.prefixes.length > 0;
  }

  /** A folder's entries, a page at a time, in key order (the fixed folders first at the root). */
  async *list(path: string): AsyncGenerator<SpaceEntry[]> {
    const entry = await this.stat(path);
    if (!entry) throw new AppError("not_found", `'/${path}' does not exist`);
    if (entry.kind !== "folder") throw new AppError("conflict", `'/${path}' is not a folder`);
    const prefix = this.folderPrefix(path);
    const shown = new Set<string>();
    if (path === "") {
      yield FIXED_FOLDERS.map((f) => this.folderEntry(f));
      for (const f of FIXED_FOLDERS) shown.add(f);
    }
    let after: string | undefined;
    for (;;) {
      const page = await this.storage.list(prefix, { delimiter: "/", after, limit: LIST_PAGE });
      const out: SpaceEntry[] = [];
      for (const p of page.prefixes) {
        const name = p.slice(prefix.length, -1);
        if (!shown.has(name)) out.push(this.folderEntry(join(path, name)));
      }
      for (const o of page.objects) {
        const name = o.key.slice(prefix.length);
        if (name === FOLDER_MARKER || shown.has(name)) continue;
        out.push(this.fileEntry(join(path, name), o));
      }
      if (out.length > 0) yield out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      if (!page.next) return;
      after = page.next;
    }
  }

  async openRead(path: string): Promise<ObjectReader> {
    const info = await this.storage.stat(this.key(path)).catch(() => null);
    if (!info) {
      if (await this.isFolder(path)) throw new AppError("conflict", `'/${path}' is a folder`);
      throw new AppError("not_found", `'/${path}' does not exist`);
    }
    return new ObjectReader(this.storage, this.key(path), info.size);
  }

  async openWrite(path: string, opts: OpenWriteOptions): Promise<SpaceWriter> {
    if (path === "" || FIXED_FOLDERS.includes(path)) throw new AppError("conflict", `'/${path}' is a folder`);
    await this.requireFolder(parentOf(path));
    const existing = await this.storage.stat(this.key(path));
    if (!existing && (await this.isFolder(path))) throw new AppError("conflict", `'/${path}' is a folder`);
    if (existing && opts.exclusive) throw new AppError("conflict", `'/${path}' already exists`);
    if (!existing && !opts.create) throw new AppError("not_found", `'/${path}' does not exist`);
    const base = existing && !opts.truncate ? existing : null;
    const upload = new SpaceUpload({
      storage: this.storage,
      key: this.key(path),
      base,
      createsEmpty: !existing || opts.truncate,
      append: opts.append,
      maxBytes: this.ctx.settings.maxUploadBytes,
    });
    const files = this;
    return {
      path,
      get size() {
        return upload.size;
      },
      write: (offset, data) => upload.write(offset, data),
      abort: (reason) => upload.abort(reason),
      async close() {
        const stored = await upload.close();
        if (stored) {
          files.ctx.log.info({ event: "sftp.upload", connectionId: files.account.connectionId, path, size: stored.size }, "sftp upload stored");
          if (isArrivalPath(path)) await files.arrived(path, stored);
        }
        return stored;
      },
    };
  }

  /**
   * Renames a file or a folder (every key under it). An existing file at the
   * target is replaced (as POSIX rename does); an existing folder is not.
   * A file that gets its first final name inside the inbound folder (a
   * temporary name renamed, or a file moved in from elsewhere) is an arrival.
   */
  async rename(from: string, to: string): Promise<void> {
    for (const p of [from, to]) {
      if (p === "" || FIXED_FOLDERS.includes(p)) throw new AppError("forbidden", `'/${p}' cannot be renamed or replaced`);
    }
    if (from === to) {
      if (!(await this.stat(from))) throw new AppError("not_found", `'/${from}' does not exist`);
      return;
    }
    if (to.startsWith(`${from}/`)) throw new AppError("invalid_input", `'/${from}' cannot be moved into itself`);
    await this.requireFolder(parentOf(to));
    const file = await this.storage.stat(this.key(from));
    if (file) {
      if (await this.isFolder(to)) throw new AppError("conflict", `'/${to}' is a folder`);
      await this.storage.move(this.key(from), this.key(to));
      await this.keepFolder(parentOf(from));
      if (isArrivalPath(to) && !isArrivalPath(from)) await this.arrived(to, (await this.storage.stat(this.key(to))) ?? file);
      return;
    }
    if (!(await this.isFolder(from))) throw new AppError("not_found", `'/${from}' does not exist`);
    if (await this.stat(to)) throw new AppError("conflict", `'/${to}' already exists`);
    const src = this.folderPrefix(from);
    const dst = this.folderPrefix(to);
    // Always the first page again: what it listed has moved away.
    for (;;) {
      const page = await this.storage.list(src, { limit: 1000 });
      if (page.objects.length === 0) return this.keepFolder(parentOf(from));
      for (const o of page.objects) {
        const rest = o.key.slice(src.length);
        await this.storage.move(o.key, `${dst}${rest}`);
        const oldPath = join(from, rest);
        const newPath = join(to, rest);
        if (baseName(rest) !== FOLDER_MARKER && isArrivalPath(newPath) && !isArrivalPath(oldPath)) await this.arrived(newPath, o);
      }
    }
  }

  async mkdir(path: string): Promise<void> {
    if (await this.stat(path)) throw new AppError("conflict", `'/${path}' already exists`);
    await this.requireFolder(parentOf(path));
    await this.storage.put(`${this.key(path)}/${FOLDER_MARKER}`, new Uint8Array(0), { contentType: "application/x-directory" });
  }

  async rmdir(path: string): Promise<void> {
    if (path === "" || FIXED_FOLDERS.includes(path)) throw new AppError("forbidden", `'/${path}' cannot be removed`);
    if (await this.storage.stat(this.key(path))) throw new AppError("conflict", `'/${path}' is not a folder`);
    const page = await this.storage.list(this.folderPrefix(path), { limit: 2 });
    const keys = page.objects.map((o) => o.key);
    if (keys.length === 0 && page.prefixes.length === 0) throw new AppError("not_found", `'/${path}' does not exist`);
    const marker = `${this.folderPrefix(path)}${FOLDER_MARKER}`;
    if (page.prefixes.length > 0 || keys.some((k) => k !== marker)) throw new AppError("conflict", `'/${path}' is not empty`);
    await this.storage.delete(marker);
  }

  async remove(path: string): Promise<void> {
    if (path === "" || FIXED_FOLDERS.includes(path)) throw new AppError("conflict", `'/${path}' is a folder`);
    if (!(await this.storage.stat(this.key(path)))) {
      if (await this.isFolder(path)) throw new AppError("conflict", `'/${path}' is a folder`);
      throw new AppError("not_found", `'/${path}' does not exist`);
    }
    await this.storage.delete(this.key(path));
    await this.keepFolder(parentOf(path));
  }

  /** A folder whose last entry went away stays, as its marker (as on a disk). */
  private async keepFolder(path: string): Promise<void> {
    if (path === "" || FIXED_FOLDERS.includes(path) || (await this.isFolder(path))) return;
    try {
      await this.storage.put(`${this.key(path)}/${FOLDER_MARKER}`, new Uint8Array(0), { contentType: "application/x-directory" });
    } catch (e) {
      // A file took the folder's name meanwhile: nothing to keep.
      if (!(e instanceof AppError && e.code === "conflict")) throw e;
    }
  }

  private async requireFolder(path: string): Promise<void> {
    if (await this.isFolder(path)) return;
    if (await this.storage.stat(this.key(path))) throw new AppError("conflict", `'/${path}' is not a folder`);
    throw new AppError("not_found", `folder '/${path}' does not exist`);
  }

  private async arrived(path: string, info: ObjectInfo): Promise<void> {
    await enqueueArrival(this.ctx, { ...this.account, path, size: info.size, etag: info.etag });
  }

  private fileEntry(path: string, info: ObjectInfo): SpaceEntry {
    return { path, name: baseName(path), kind: "file", size: info.size, modifiedAt: info.updatedAt };
  }

  private folderEntry(path: string): SpaceEntry {
    return { path, name: path === "" ? "/" : baseName(path), kind: "folder", size: 0, modifiedAt: this.ctx.clock.now() };
  }
}

function join(folder: string, name: string): string {
  return folder === "" ? name : `${folder}/${name}`;
}
