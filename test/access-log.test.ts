import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { createService } from "../src/app";
import { parseConfig } from "../src/config";
import { createWorkspace } from "../src/services/workspaces/create-workspace";
import { freshDatabase } from "./helpers/database";

/** One access line a request at `info`, without keys or query values; none (and no per-request hook) below it. */
async function linesAt(level: string): Promise<{ lines: Record<string, unknown>[]; apiKey: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "fps-access-"));
  const database = await freshDatabase(dataDir);
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level, base: undefined }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: level, PUBLIC_URL: "http://localhost:3000" });
  const service = await createService({ config, db: database.db, log, startJobs: false });
  try {
    const { key } = await createWorkspace(service.svc, { name: "Acme", email: "ops@acme-logistics.com" });
    const get = (path: string, apiKey?: string) =>
      service.http.handle(new Request(`http://localhost${path}`, { headers: apiKey ? { "x-api-key": apiKey } : {} })).then((r) => r.text());
    await get("/healthz");
    await get("/connections?name=secret-partner", key.apiKey);
    await get("/pipelines");
    // After-response hooks run once the reply is out.
    await Bun.sleep(20);
    return { lines: lines.filter((l) => l.msg === "request"), apiKey: key.apiKey };
  } finally {
    await service.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe("access log", () => {
  test("at info: one line a request with method, route, status and time; never the key or query values", async () => {
    const { lines, apiKey } = await linesAt("info");
    expect(lines.map((l) => [l.method, l.route, l.status])).toEqual([
      ["GET", "/healthz", 200],
      ["GET", "/connections", 200],
      ["GET", "/pipelines", 401],
    ]);
    for (const l of lines) expect(typeof l.ms).toBe("number");
    const text = JSON.stringify(lines);
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain("secret-partner");
  });

  test("at warn: no access lines", async () => {
    expect((await linesAt("warn")).lines).toEqual([]);
  });
});
