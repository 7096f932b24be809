import { expect } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SftpClientPort } from "../../src/adapters/sftp/port";
import { createService, type Service } from "../../src/app";
import { parseConfig } from "../../src/config";
import { ManualClock } from "../../src/domain/clock";
import { createLogger } from "../../src/logger";
import type { Actor } from "../../src/services/context";
import { authenticate } from "../../src/services/keys/authenticate";
import { createWorkspace } from "../../src/services/workspaces/create-workspace";
import { setFeature } from "../../src/services/workspaces/update-workspace";
import { createCaller } from "../../trpc/router";
import { freshDatabase, type TestDatabase } from "./database";

export const NOW = new Date("2026-11-22T10:00:00Z");

export interface TestWorkspace {
  workspaceId: string;
  apiKey: string;
  keyId: string;
  actor: Actor;
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  version?: string | null;
  headers?: Record<string, string>;
  rawBody?: string;
}

/** One service over a fresh database, driven in process through `app.handle`. */
export class Harness {
  private constructor(
    readonly service: Service,
    readonly clock: ManualClock,
    private readonly database: TestDatabase,
    readonly dataDir: string,
    private readonly encryptionKey: string,
  ) {}

  static async start(
    opts: { sftp?: SftpClientPort; env?: Record<string, string>; startJobs?: boolean; dbVia?: (url: string) => string; logLevel?: string } = {},
  ): Promise<Harness> {
    const dataDir = mkdtempSync(join(tmpdir(), "fps-data-"));
    const database = await freshDatabase(dataDir, { via: opts.dbVia });
    const encryptionKey = randomBytes(32).toString("base64");
    const config = parseConfig({
      DATA_DIR: dataDir,
      ENCRYPTION_KEY: encryptionKey,
      LOG_LEVEL: "silent",
      PUBLIC_URL: "http://localhost:3000",
      ...opts.env,
    });
    const clock = new ManualClock(NOW);
    const service = await createService({ config, clock, db: database.db, log: createLogger(opts.logLevel ?? "silent"), sftp: opts.sftp, startJobs: opts.startJobs });
    return new Harness(service, clock, database, dataDir, encryptionKey);
  }

  /** Environment for a child process (the CLI, the service) that must use this harness's database. */
  childEnv(): Record<string, string> {
    const env: Record<string, string> = { DATA_DIR: this.dataDir, ENCRYPTION_KEY: this.encryptionKey, LOG_LEVEL: "silent" };
    if (this.database.url) env.DATABASE_URL = this.database.url;
    return env;
  }

  get svc() {
    return this.service.svc;
  }

  async workspace(opts: { features?: string[]; name?: string } = {}): Promise<TestWorkspace> {
    const { workspace, key } = await createWorkspace(this.svc, { name: opts.name ?? "Acme", email: "ops@acme-logistics.com" });
    for (const feature of opts.features ?? []) await setFeature(this.svc, { workspaceId: workspace.id, feature, enabled: true });
    const actor = await authenticate(this.svc, { apiKey: key.apiKey });
    return { workspaceId: workspace.id, apiKey: key.apiKey, keyId: key.id, actor };
  }

  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers["x-api-key"] = opts.key;
    if (opts.version) headers["service-version"] = opts.version;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await this.service.http.handle(new Request(`http://localhost${path}`, { method, headers, body }));
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  /** REST under the latest version, the common case in tests. */
  api<T = any>(ws: TestWorkspace, method: string, path: string, body?: unknown) {
    return this.request<T>(method, path, { key: ws.apiKey, body, version: "2026-05-25" });
  }

  /** REST under the latest version, expecting success: the reply's body. */
  async ok<T = any>(ws: TestWorkspace, method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.api<T>(ws, method, path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  async graphql<T = any>(key: string | null, query: string, variables?: Record<string, unknown>) {
    return this.request<{ data?: T; errors?: { message: string; extensions: Record<string, unknown> }[] }>("POST", "/graphql", {
      key,
      body: { query, variables },
    });
  }

  trpc(ws: TestWorkspace) {
    return createCaller({ svc: this.svc, actor: ws.actor });
  }

  async close(): Promise<void> {
    await this.service.stop();
    await this.database.drop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
