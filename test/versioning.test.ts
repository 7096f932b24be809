import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createWorkspace } from "../src/services/workspaces/create-workspace";
import { setDefaultVersion } from "../src/services/workspaces/update-workspace";
import { Harness, NOW, type Reply, type TestWorkspace } from "./helpers/harness";

const LATEST = "2026-05-25";
const LEGACY = "2024-09-01";
const SECRETS = {
  sftpPassword: "clear-password-V1x",
  sftpPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
  sftpPassphrase: "clear-passphrase-V2y",
  awsPassword: "clear-aws-V3z",
};
const SECRET_NAMES = Object.keys(SECRETS);

let h: Harness;
/** No workspace default (removed after creation). */
let ws: TestWorkspace;
/** Workspace default 2026-05-25, as every new workspace gets it. */
let modern: TestWorkspace;
/** Workspace default 2024-09-01, set explicitly. */
let pinnedLegacy: TestWorkspace;
let conn: { id: string; name: string };

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Plain" });
  modern = await h.workspace({ name: "Modern" });
  pinnedLegacy = await h.workspace({ name: "Pinned" });
  await setDefaultVersion(h.svc, { workspaceId: ws.workspaceId, version: null });
  await setDefaultVersion(h.svc, { workspaceId: pinnedLegacy.workspaceId, version: LEGACY });
  const r = await h.api(ws, "POST", "/connections", {
    name: "Versioned",
    sftpUsername: "vera",
    sftpServer: { host: "sftp.versioned.example" },
    ...SECRETS,
  });
  expect(r.status).toBe(200);
  conn = r.body;
});

afterEach(() => {
  h.clock.set(NOW);
});

afterAll(async () => {
  await h.close();
});

describe("a new workspace's version", () => {
  test("is pinned to the newest version unless the caller asks for another or for none", async () => {
    expect(modern.actor.defaultVersion).toBe(LATEST);
    const plain = await call(modern, "GET", "/connections");
    expect(plain.headers.get("service-version")).toBe(LATEST);
    expect(plain.headers.get("deprecation")).toBeNull();
    const asked = await createWorkspace(h.svc, { name: "Asked", email: "ops@asked-corp.com", defaultVersion: LEGACY });
    expect(asked.workspace.defaultVersion).toBe(LEGACY);
    const none = await createWorkspace(h.svc, { name: "None", email: "ops@none-corp.com", defaultVersion: null });
    expect(none.workspace.defaultVersion).toBeNull();
    const fallback = await h.request("GET", "/connections", { key: none.key.apiKey });
    expect(fallback.headers.get("service-version")).toBe(LEGACY);
    expect(fallback.headers.get("deprecation")).toBe("true");
    const bad = await createWorkspace(h.svc, { name: "Bad", email: "ops@bad-corp.com", defaultVersion: "2025-01-01" as never }).catch((e) => e);
    expect(bad.code).toBe("invalid_input");
    expect(bad.message).toContain("defaultVersion: must be one of 2024-09-01, 2026-05-25, or none");
  });
});

const call = (w: TestWorkspace | null, method: string, path: string, version?: string, body?: unknown) =>
  h.request(method, path, { key: w?.apiKey ?? null, version: version ?? null, body });

function expectNoSecrets(r: Reply) {
  for (const item of Array.isArray(r.body) ? r.body : [r.body]) {
    for (const name of SECRET_NAMES) expect(item).not.toHaveProperty(name);
  }
  const text = JSON.stringify(r.body);
  for (const value of Object.values(SECRETS)) expect(text).not.toContain(JSON.stringify(value).slice(1, 20));
}

function expectSunset(r: Reply) {
  expect(r.status).toBe(410);
  expect(r.body.error).toBe("api_version_sunset");
  expect(r.body.statusCode).toBe(410);
  expect(typeof r.body.message).toBe("string");
  expect(r.body.message).toContain("2027-05-25");
  expect(r.body.migration_url).toMatch(/^https?:\/\/.+\/docs\/migrations\/2026-05-25$/);
}

describe("the Service-Version header is echoed on every response", () => {
  test("successes carry the version applied: header when given, else 2024-09-01", async () => {
    for (const [version, expected] of [
      [LATEST, LATEST],
      [LEGACY, LEGACY],
      [undefined, LEGACY],
    ] as const) {
      for (const [method, path] of [
        ["GET", "/connections"],
        ["GET", `/connections/${conn.id}`],
        ["GET", `/clients/${conn.id}`],
        ["GET", "/schemas"],
        ["GET", "/pipelines"],
      ] as const) {
        const r = await call(ws, method, path, version);
        expect(r.status).toBe(200);
        expect(r.headers.get("service-version")).toBe(expected);
      }
    }
  });

  test("errors carry it too: 400, 401, 404 (unknown id and unknown route), 409, 415", async () => {
    for (const version of [LATEST, LEGACY]) {
      const replies = [
        [400, await call(ws, "POST", "/connections", version, { name: "" })],
        [401, await call(null, "GET", "/connections", version)],
        [401, await h.request("GET", "/connections", { key: "fps_not_a_real_key", version })],
        [404, await call(ws, "GET", "/connections/conn_missing", version)],
        [404, await call(ws, "GET", "/no/such/route", version)],
        [409, await call(ws, "POST", "/connections", version, { name: "Versioned" })],
        [415, await h.request("POST", "/connections", { key: ws.apiKey, version, rawBody: "<x/>", headers: { "content-type": "application/xml" } })],
      ] as const;
      for (const [status, r] of replies) {
        expect(r.status).toBe(status);
        expect(r.body.statusCode).toBe(status);
        expect(r.headers.get("service-version")).toBe(version);
      }
    }
    const bare = await call(ws, "GET", "/connections/conn_missing");
    expect(bare.status).toBe(404);
    expect(bare.headers.get("service-version")).toBe(LEGACY);
  });

  test("an unknown version is a 400 'unsupported_version' naming Service-Version, and still labelled", async () => {
    for (const version of ["2025-01-01", "latest", "2026-5-25"]) {
      const r = await call(ws, "GET", "/connections", version);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ statusCode: 400, error: "unsupported_version" });
      expect(r.body.message).toContain("Service-Version");
      expect(r.body.message).toContain(version);
      expect(r.body.message).toContain(LATEST);
      expect(r.headers.get("service-version")).not.toBeNull();
    }
    const before = (await call(ws, "GET", "/connections", LATEST)).body;
    const post = await call(ws, "POST", "/connections", "2030-01-01", { name: "Never Stored" });
    expect(post.status).toBe(400);
    expect(post.body.error).toBe("unsupported_version");
    expect((await call(ws, "GET", "/connections", LATEST)).body).toEqual(before);
  });
});

describe("credentials by version", () => {
  test("absent header: 2024-09-01 shapes, which return stored credentials in clear", async () => {
    const one = await call(ws, "GET", `/connections/${conn.id}`);
    expect(one.headers.get("service-version")).toBe(LEGACY);
    expect(one.body).toMatchObject(SECRETS);
    const list = await call(ws, "GET", "/connections");
    expect(list.body.find((c: { id: string }) => c.id === conn.id)).toMatchObject(SECRETS);
    const legacyAlias = await call(ws, "GET", `/clients/${conn.id}`, LEGACY);
    expect(legacyAlias.body).toMatchObject(SECRETS);
  });

  test("2024-09-01 returns credentials from create and update as well", async () => {
    const created = await call(ws, "POST", "/clients", LEGACY, { name: "Legacy Create", sftpPassword: "legacy-pw-1" });
    expect(created.status).toBe(200);
    expect(created.body.sftpPassword).toBe("legacy-pw-1");
    const updated = await call(ws, "PATCH", `/clients/${created.body.id}`, LEGACY, { name: "Legacy Create", sftpPassword: "legacy-pw-2" });
    expect(updated.body.sftpPassword).toBe("legacy-pw-2");
    const modernView = await call(ws, "GET", `/connections/${created.body.id}`, LATEST);
    expect(modernView.body).not.toHaveProperty("sftpPassword");
    expect(modernView.body.credentialsSet).toEqual(["sftpPassword"]);
  });

  test("2026-05-25 never returns them, on any route or alias, only credentialsSet", async () => {
    const replies = [
      await call(ws, "GET", `/connections/${conn.id}`, LATEST),
      await call(ws, "GET", "/connections", LATEST),
      await call(ws, "GET", `/clients/${conn.id}`, LATEST),
      await call(ws, "GET", "/clients", LATEST),
      await call(ws, "PATCH", `/connections/${conn.id}`, LATEST, { name: "Versioned" }),
      await call(ws, "POST", "/connections", LATEST, { name: "Modern Create", ...SECRETS, sftpServer: { host: "m.example.com" } }),
    ];
    for (const r of replies) {
      expect(r.status).toBe(200);
      expectNoSecrets(r);
    }
    expect(replies[0]!.body.credentialsSet).toEqual(SECRET_NAMES);
    expect(replies[5]!.body.credentialsSet).toEqual(SECRET_NAMES);
  });
});

describe("workspace default version", () => {
  test("applies when the header is absent; the header overrides it", async () => {
    const { body: mine } = await call(modern, "POST", "/connections", LATEST, { name: "Modern Conn", sftpPassword: "modern-pw" });
    const bare = await call(modern, "GET", `/connections/${mine.id}`);
    expect(bare.status).toBe(200);
    expect(bare.headers.get("service-version")).toBe(LATEST);
    expect(bare.body).not.toHaveProperty("sftpPassword");
    expect(bare.body.credentialsSet).toEqual(["sftpPassword"]);

    const overridden = await call(modern, "GET", `/connections/${mine.id}`, LEGACY);
    expect(overridden.headers.get("service-version")).toBe(LEGACY);
    expect(overridden.body.sftpPassword).toBe("modern-pw");

    const err = await call(modern, "GET", "/connections/conn_missing");
    expect(err.status).toBe(404);
    expect(err.headers.get("service-version")).toBe(LATEST);
  });

  test("a legacy workspace default is overridden by a 2026-05-25 header", async () => {
    const { body: mine } = await call(pinnedLegacy, "POST", "/connections", LATEST, { name: "Pinned Conn", sftpPassword: "pinned-pw" });
    const bare = await call(pinnedLegacy, "GET", `/connections/${mine.id}`);
    expect(bare.headers.get("service-version")).toBe(LEGACY);
    expect(bare.body.sftpPassword).toBe("pinned-pw");
    const modernView = await call(pinnedLegacy, "GET", `/connections/${mine.id}`, LATEST);
    expect(modernView.headers.get("service-version")).toBe(LATEST);
    expect(modernView.body).not.toHaveProperty("sftpPassword");
  });

  test("clearing the default restores 2024-09-01", async () => {
    const w = await h.workspace({ name: "Toggled" });
    await setDefaultVersion(h.svc, { workspaceId: w.workspaceId, version: LATEST });
    expect((await call(w, "GET", "/connections")).headers.get("service-version")).toBe(LATEST);
    await setDefaultVersion(h.svc, { workspaceId: w.workspaceId, version: null });
    expect((await call(w, "GET", "/connections")).headers.get("service-version")).toBe(LEGACY);
  });
});

describe("deprecation headers before the sunset", () => {
  test("/clients under 2026-05-25 works and says it is deprecated; /connections does not", async () => {
    const legacyRoute = await call(ws, "GET", "/clients", LATEST);
    expect(legacyRoute.status).toBe(200);
    expect(legacyRoute.headers.get("deprecation")).toBe("true");
    expect(legacyRoute.headers.get("sunset")).toContain("2027-05-25");
    expect(legacyRoute.headers.get("link")).toContain("/docs/migrations/2026-05-25");
    const canonical = await call(ws, "GET", "/connections", LATEST);
    expect(canonical.headers.get("deprecation")).toBeNull();
    expect(canonical.headers.get("link")).toBeNull();
  });

  test("a request under 2024-09-01 is told the version is deprecated", async () => {
    const r = await call(ws, "GET", "/connections", LEGACY);
    expect(r.status).toBe(200);
    expect(r.headers.get("deprecation")).toBe("true");
    expect(r.headers.get("sunset")).toContain("2027-05-25");
  });
});

describe("after the sunset (2027-05-25T00:00:00Z)", () => {
  const moments = ["2027-05-25T00:00:00Z", "2027-05-25T12:00:00Z", "2028-01-01T00:00:00Z"];

  test("a request pinned by header to 2024-09-01 gets 410 with the migration URL, on every resource", async () => {
    for (const at of moments) {
      h.clock.set(at);
      for (const path of ["/connections", `/connections/${conn.id}`, "/schemas", "/pipelines", "/webhooks"]) {
        const r = await call(ws, "GET", path, LEGACY);
        expectSunset(r);
        expect(r.headers.get("service-version")).toBe(LEGACY);
      }
    }
  });

  test("a pinned write is refused without changing anything", async () => {
    h.clock.set(moments[0]!);
    const before = (await call(ws, "GET", "/connections", LATEST)).body;
    const post = await call(ws, "POST", "/connections", LEGACY, { name: "After Sunset" });
    expectSunset(post);
    const patch = await call(ws, "PATCH", `/connections/${conn.id}`, LEGACY, { name: "Renamed After Sunset" });
    expectSunset(patch);
    const del = await call(ws, "DELETE", `/connections/${conn.id}`, LEGACY);
    expectSunset(del);
    expect((await call(ws, "GET", "/connections", LATEST)).body).toEqual(before);
  });

  test("a workspace default of 2024-09-01 counts as pinned; a 2026-05-25 header still works", async () => {
    h.clock.set(moments[0]!);
    expectSunset(await call(pinnedLegacy, "GET", "/connections"));
    const ok = await call(pinnedLegacy, "GET", "/connections", LATEST);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("service-version")).toBe(LATEST);
  });

  test("/clients answers 410 even under 2026-05-25, and when unpinned", async () => {
    h.clock.set(moments[0]!);
    for (const [method, path, body] of [
      ["GET", "/clients", undefined],
      ["GET", `/clients/${conn.id}`, undefined],
      ["POST", "/clients", { name: "Never" }],
      ["PATCH", `/clients/${conn.id}`, { name: "Never" }],
      ["DELETE", `/clients/${conn.id}`, undefined],
      ["POST", `/clients/${conn.id}/test-connection`, undefined],
    ] as const) {
      const modernReply = await call(ws, method, path, LATEST, body);
      expectSunset(modernReply);
      expect(modernReply.headers.get("service-version")).toBe(LATEST);
      expectSunset(await call(modern, method, path, undefined, body));
      expectSunset(await call(ws, method, path, undefined, body));
    }
    expect((await call(ws, "GET", `/connections/${conn.id}`, LATEST)).body.name).toBe("Versioned");
  });

  test("an unpinned request gets 2026-05-25 shapes: no credentials", async () => {
    h.clock.set(moments[1]!);
    const r = await call(ws, "GET", `/connections/${conn.id}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("service-version")).toBe(LATEST);
    expectNoSecrets(r);
    expect(r.body.credentialsSet).toEqual(SECRET_NAMES);
    expect(r.headers.get("deprecation")).toBeNull();
    const list = await call(ws, "GET", "/connections");
    expect(list.status).toBe(200);
    expectNoSecrets(list);
  });

  test("unpinned error replies are labelled 2026-05-25, not the retired version", async () => {
    h.clock.set(moments[0]!);
    for (const [status, r] of [
      [404, await call(ws, "GET", "/connections/conn_missing")],
      [404, await call(ws, "GET", "/no/such/route")],
      [401, await call(null, "GET", "/connections")],
    ] as const) {
      expect(r.status).toBe(status);
      expect(r.headers.get("service-version")).toBe(LATEST);
    }
  });

  test("one millisecond before the sunset everything still works", async () => {
    h.clock.set("2027-05-24T23:59:59.999Z");
    const pinned = await call(ws, "GET", `/connections/${conn.id}`, LEGACY);
    expect(pinned.status).toBe(200);
    expect(pinned.body.sftpPassword).toBe(SECRETS.sftpPassword);
    const bare = await call(ws, "GET", `/connections/${conn.id}`);
    expect(bare.status).toBe(200);
    expect(bare.headers.get("service-version")).toBe(LEGACY);
    expect(bare.body.sftpPassword).toBe(SECRETS.sftpPassword);
    expect((await call(pinnedLegacy, "GET", "/connections")).status).toBe(200);
    const alias = await call(ws, "GET", `/clients/${conn.id}`, LATEST);
    expect(alias.status).toBe(200);
    expect(alias.headers.get("deprecation")).toBe("true");
  });
});

describe("the migration guide", () => {
  test("is served at the migration_url path", async () => {
    h.clock.set("2027-06-01T00:00:00Z");
    const gone = await call(ws, "GET", "/connections", LEGACY);
    expectSunset(gone);
    const url = new URL(gone.body.migration_url);
    const link = (await call(ws, "GET", "/clients", LATEST)).headers.get("link");
    expect(link).toContain(gone.body.migration_url);

    const guide = await h.request("GET", url.pathname, { key: ws.apiKey });
    expect(guide.status).toBe(200);
    expect(guide.headers.get("content-type")).toContain("markdown");
    expect(guide.body).toContain("2026-05-25");
    expect(guide.body).toContain("/connections");
    expect(guide.body).toContain("Service-Version");
  });
});
