import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authenticate } from "../src/services/keys/authenticate";
import { Harness } from "./helpers/harness";

/** The admin CLI, run as the real process (`bun src/cli.ts`) against the harness's database. */
let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.close());

const ROOT = join(import.meta.dir, "..");

async function cli(...args: string[]) {
  return cliWith(h.childEnv(), ...args);
}

/** The CLI with exactly this environment (plus PATH), from the project folder. */
async function cliWith(env: Record<string, string>, ...args: string[]) {
  const proc = Bun.spawn([process.execPath, "src/cli.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "silent", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr, json: code === 0 ? JSON.parse(stdout) : null };
}

describe("workspace:create", () => {
  test("creates a workspace and a working admin key, printed as one JSON object", async () => {
    const r = await cli("workspace:create", "--name", "Northwind", "--email", "ops@northwind-traders.com");
    expect(r.code).toBe(0);
    expect(r.json.workspaceId).toMatch(/^ws_/);
    expect(r.json.apiKey).toMatch(/^fps_[0-9A-Za-z]{12}_[0-9A-Za-z]{32}$/);
    const actor = await authenticate(h.svc, { apiKey: r.json.apiKey });
    expect(actor.workspaceId).toBe(r.json.workspaceId);
    expect(actor.role).toBe("admin");
    const res = await h.request("GET", "/connections", { key: r.json.apiKey });
    expect(res.status).toBe(200);
  });

  test("stores only a digest of the key", async () => {
    const r = await cli("workspace:create", "--name", "Contoso", "--email", "it@contoso-industries.com");
    const k = h.svc.db.t.apiKeys;
    const [row] = await h.svc.db.read.select().from(k).where(eq(k.id, r.json.keyId));
    expect(row).toBeDefined();
    expect(JSON.stringify(row)).not.toContain(r.json.apiKey.split("_")[2]);
    expect(row!.secretHash).toMatch(/^[0-9a-f]{64}$/);
  });

  for (const email of ["someone@gmail.com", "someone@yahoo.co.uk", "someone@GMX.de", "someone@mail.outlook.com"]) {
    test(`refuses the free-mail address ${email} and creates nothing`, async () => {
      const before = await h.svc.db.read.$count(h.svc.db.t.workspaces);
      const r = await cli("workspace:create", "--name", "Personal", "--email", email);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("personal e-mail provider");
      expect(r.stderr).toContain("company");
      expect(r.stdout).toBe("");
      expect(await h.svc.db.read.$count(h.svc.db.t.workspaces)).toBe(before);
    });
  }

  test("refuses a malformed e-mail and a missing name", async () => {
    const bad = await cli("workspace:create", "--name", "X", "--email", "not-an-email");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("email:");
    const missing = await cli("workspace:create", "--email", "a@acme-corp.com");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--name is required");
  });
});

describe("keys", () => {
  test("key:create makes a member key; key:revoke stops it at once; key:list shows both without secrets", async () => {
    const ws = await cli("workspace:create", "--name", "Fabrikam", "--email", "ops@fabrikam-inc.com");
    const member = await cli("key:create", "--workspace", ws.json.workspaceId, "--role", "member", "--name", "ci");
    expect(member.code).toBe(0);
    expect(member.json.role).toBe("member");
    expect((await authenticate(h.svc, { apiKey: member.json.apiKey })).role).toBe("member");

    const revoked = await cli("key:revoke", "--key", member.json.id);
    expect(revoked.code).toBe(0);
    expect(revoked.json.revokedAt).toBeTruthy();
    const res = await h.request("GET", "/connections", { key: member.json.apiKey });
    expect(res.status).toBe(401);
    expect(res.body.message).toContain("revoked");

    const list = await cli("key:list", "--workspace", ws.json.workspaceId);
    expect(list.json.keys.map((k: { role: string }) => k.role).sort()).toEqual(["admin", "member"]);
    expect(list.stdout).not.toContain(member.json.apiKey);
  });

  test("key:create refuses an unknown role and an unknown workspace", async () => {
    const ws = await cli("workspace:create", "--name", "Tailspin", "--email", "ops@tailspin-toys.com");
    const role = await cli("key:create", "--workspace", ws.json.workspaceId, "--role", "owner");
    expect(role.code).toBe(1);
    expect(role.stderr).toContain("role: must be one of admin, member");
    const nows = await cli("key:create", "--workspace", "ws_nope");
    expect(nows.code).toBe(1);
    expect(nows.stderr).toContain("workspace 'ws_nope' not found");
  });
});

describe("workspace settings", () => {
  test("workspace:feature enables and disables aggregated mappings", async () => {
    const ws = await cli("workspace:create", "--name", "Wingtip", "--email", "ops@wingtip-toys.com");
    const on = await cli("workspace:feature", "--workspace", ws.json.workspaceId, "--enable", "aggregated-mappings");
    expect(on.json.features).toEqual(["aggregated-mappings"]);
    expect((await authenticate(h.svc, { apiKey: ws.json.apiKey })).features).toContain("aggregated-mappings");
    const off = await cli("workspace:feature", "--workspace", ws.json.workspaceId, "--disable", "aggregated-mappings");
    expect(off.json.features).toEqual([]);
    const unknown = await cli("workspace:feature", "--workspace", ws.json.workspaceId, "--enable", "time-travel");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("feature: must be one of aggregated-mappings");
  });

  test("workspace:create pins the newest version unless told another or none", async () => {
    const pinned = await cli("workspace:create", "--name", "Proseware", "--email", "ops@proseware-inc.com");
    expect(pinned.json.defaultVersion).toBe("2026-05-25");
    const none = await cli("workspace:create", "--name", "Lucerne", "--email", "ops@lucerne-publishing.com", "--version", "none");
    expect(none.json.defaultVersion).toBeNull();
    const res = await h.request("GET", "/connections", { key: none.json.apiKey });
    expect(res.headers.get("service-version")).toBe("2024-09-01");
  });

  test("workspace:version sets the version applied when a request carries no header", async () => {
    const ws = await cli("workspace:create", "--name", "Litware", "--email", "ops@litware-inc.com", "--version", "none");
    const set = await cli("workspace:version", "--workspace", ws.json.workspaceId, "--version", "2026-05-25");
    expect(set.json.defaultVersion).toBe("2026-05-25");
    const res = await h.request("GET", "/connections", { key: ws.json.apiKey });
    expect(res.headers.get("service-version")).toBe("2026-05-25");
    const reset = await cli("workspace:version", "--workspace", ws.json.workspaceId, "--version", "none");
    expect(reset.json.defaultVersion).toBeNull();
    const bad = await cli("workspace:version", "--workspace", ws.json.workspaceId, "--version", "2025-01-01");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("version: must be one of");
  });
});

describe("which database", () => {
  test("every answer names the database and DATA_DIR it used (a Postgres URL without its password)", async () => {
    const r = await cli("workspace:create", "--name", "Adatum", "--email", "ops@adatum-corp.com");
    expect(r.code).toBe(0);
    expect(r.json.dataDir).toBe(h.dataDir);
    const url = h.childEnv().DATABASE_URL;
    if (url) {
      const expected = new URL(url);
      expected.password = "";
      expect(r.json.database).toBe(expected.toString());
    } else expect(r.json.database).toBe(`sqlite:${join(h.dataDir, "service.db")}`);
    const list = await cli("key:list", "--workspace", r.json.workspaceId);
    expect(list.json).toMatchObject({ database: r.json.database, dataDir: h.dataDir });
  });

  test("pointed at no database, it refuses with one line and creates nothing", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "fps-cli-")), "data");
    const r = await cliWith({ DATA_DIR: dataDir }, "workspace:create", "--name", "Lost", "--email", "ops@lost-corp.com");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(`no database at ${join(dataDir, "service.db")}`);
    expect(r.stderr).toContain("--init");
    // Neither the folder, nor a database, nor an encryption key was made.
    expect(existsSync(dataDir)).toBe(false);
  });

  test("--init creates a new database there; later commands use it without the flag", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "fps-cli-")), "data");
    const created = await cliWith({ DATA_DIR: dataDir }, "workspace:create", "--init", "--name", "Fresh", "--email", "ops@fresh-corp.com");
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toMatchObject({ database: `sqlite:${join(dataDir, "service.db")}`, dataDir });
    expect(readdirSync(dataDir)).toContain("service.db");
    const list = await cliWith({ DATA_DIR: dataDir }, "key:list", "--workspace", created.json.workspaceId);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json.keys).toHaveLength(1);
  });
});

test("an unknown command or flag prints the usage and exits 2", async () => {
  const unknown = await cli("workspace:delete");
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain("usage: bun run cli");
  const flag = await cli("key:list", "--bogus", "1");
  expect(flag.code).toBe(2);
});
