import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Webhook as Verifier } from "standardwebhooks";
import { listAuditEvents } from "../src/services/audit";
import { authenticate } from "../src/services/keys/authenticate";
import { getNotificationPreferences } from "../src/services/notifications";
import { launchChromium, newPage, shot, signUp, text, until } from "./helpers/browser";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { freePort, type Instance, secondInstance } from "./helpers/instances";
import { Receiver } from "./helpers/receiver";
import { ITEM_MAPPINGS } from "./helpers/runs";
import { sftpBatch } from "./helpers/sftp";

/**
 * The dashboard's setup pages in headless Chromium against the service as
 * `npm start` runs it (its hosted SFTP server on a free port): connections,
 * schemas, webhooks, notification preferences and outbound files, each
 * checked through what the service did (a real `sftp` login, a signed
 * delivery at a local receiver, stored preferences, the audit log).
 */
const PASSWORD = "a sturdy passphrase 7";
const EMAIL = "olive@acme-setup.com";
const CSV = "SKU,Qty,Name\na-1,3,Bolt\nb-2,10,Nut\nc-3,7,Washer\n";

let h: Harness;
let web: Instance;
let browser: Browser;
let receiver: Receiver;
let sftpPort: number;
const consoleErrors: string[] = [];

beforeAll(async () => {
  // This process claims no jobs: the browser's instance takes the arrivals, runs, deliveries and sends.
  h = await Harness.start({ startJobs: false });
  sftpPort = freePort();
  receiver = await Receiver.start();
  web = await secondInstance(h, { SFTP_PORT: String(sftpPort), SFTP_FAILURE_DELAY_MS: "0", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  receiver?.down();
  await h?.close();
});

describe("the dashboard's setup pages, end to end", () => {
  let context: BrowserContext;
  let page: Page;
  let ws: TestWorkspace;
  let connectionId: string;
  let schemaId: string;
  let sftp: { host: string; port: number; user: string; password: string };

  const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click();

  test("create a hosted connection; its partner logs in with the shown password (OpenSSH sftp) and the file shows among the arrivals", async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await newPage(context, consoleErrors);
    await signUp(page, web.url, { workspace: "Acme Setup", name: "Olive Ops", email: EMAIL, password: PASSWORD });
    await nav("Connections");
    await page.getByRole("button", { name: "New connection" }).click();
    await page.getByLabel("Connection name").fill("Acme partner");
    await page.getByLabel("SFTP username").fill("acme-partner");
    await page.getByRole("button", { name: "Create connection" }).click();
    const login = page.getByRole("region", { name: "Partner login" });
    sftp = {
      host: await text(login.getByLabel("SFTP host", { exact: true })),
      port: Number(await text(login.getByLabel("SFTP port", { exact: true }))),
      user: await text(login.getByLabel("SFTP username", { exact: true })),
      password: await text(login.getByLabel("SFTP password", { exact: true })),
    };
    expect(sftp).toMatchObject({ host: "127.0.0.1", port: sftpPort, user: "acme-partner" });
    expect(sftp.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    await page.getByRole("cell", { name: "acme-partner@127.0.0.1:" + sftpPort }).waitFor();
    await shot(page, "connections");

    const dir = mkdtempSync(join(tmpdir(), "fps-dash-sftp-"));
    writeFileSync(join(dir, "items.csv"), CSV);
    const r = await sftpBatch({ port: sftp.port, host: sftp.host, user: sftp.user, password: sftp.password }, ["ls -1", "put items.csv inbound/items.csv"], { cwd: dir });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("inbound\noutbound\n");
    // A wrong password is refused: the login above was the shown password's doing.
    expect((await sftpBatch({ port: sftp.port, user: sftp.user, password: `${sftp.password}x` }, ["ls"])).code).not.toBe(0);

    await page.getByRole("link", { name: "Acme partner" }).first().click();
    await page.getByRole("heading", { name: "Acme partner" }).waitFor();
    connectionId = page.url().split("/").pop()!;
    expect(connectionId).toMatch(/^conn/);
    // No pipeline takes the file yet: the arrival is listed with its reason.
    const arrivals = page.getByRole("region", { name: "Recent arrivals" });
    await until(async () => {
      await arrivals.getByRole("button", { name: "Refresh" }).click();
      return (await arrivals.getByRole("cell", { name: "items.csv" }).count()) > 0;
    });
    const row = arrivals.getByRole("row").filter({ has: page.getByRole("cell", { name: "items.csv" }) });
    expect(await text(row.getByRole("cell").nth(3))).toMatch(/ignored|rejected/);
    expect((await text(row.getByRole("cell").nth(4))).length).toBeGreaterThan(0);

    await page.getByRole("button", { name: "Test connection" }).click();
    const checks = page.getByRole("region", { name: "Test connection" });
    await checks.getByText("Every check passed.").waitFor();
    const server = checks.getByRole("row").filter({ hasText: "hosted server" });
    expect(await text(server.getByRole("cell").nth(1))).toBe("passed");
    expect(await text(server.getByRole("cell").nth(2))).toMatch(/^\d+ ms$/);
    await shot(page, "connection");

    // A new generated password replaces the old one: shown once, it logs in; the old one no longer does.
    await page.getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Partner logs in with").selectOption({ label: "a new generated password" });
    await page.getByRole("button", { name: "Save connection" }).click();
    const renewed = await text(page.getByRole("region", { name: "Partner login" }).getByLabel("SFTP password", { exact: true }));
    expect(renewed).not.toBe(sftp.password);
    expect((await sftpBatch({ port: sftp.port, user: sftp.user, password: sftp.password }, ["ls"])).code).not.toBe(0);
    sftp.password = renewed;
    expect((await sftpBatch({ port: sftp.port, user: sftp.user, password: sftp.password }, ["ls -1"])).stdout).toContain("inbound\n");
  }, 90_000);

  test("the service's errors show on the form; an e-mail connection is made, then deleted after a confirmation naming what goes", async () => {
    await nav("Connections");
    await page.getByRole("button", { name: "New connection" }).click();
    await page.getByLabel("Connection kind").selectOption({ label: "Customer's SFTP server" });
    await page.getByLabel("Connection name").fill("Globex server");
    await page.getByLabel("Host", { exact: true }).fill("sftp://globex.example.com");
    await page.getByRole("button", { name: "Create connection" }).click();
    expect(await text(page.getByRole("alert"))).toBe("sftpServer.host: must be a host name or IP address, without scheme or port");

    await page.getByLabel("Connection kind").selectOption({ label: "E-mail inbox" });
    await page.getByLabel("Connection name").fill("Globex mail");
    await page.getByLabel("json", { exact: true }).check();
    await page.getByLabel("Allowed senders (one a line; empty: anyone)").fill("@globex.example.com");
    await page.getByRole("button", { name: "Create connection" }).click();
    await page.getByRole("link", { name: "Globex mail" }).first().click();
    await page.getByRole("heading", { name: "Globex mail" }).waitFor();
    expect(await text(page.getByRole("definition").nth(1))).toMatch(/^globex-mail-[a-z0-9]+@/);
    await page.getByRole("button", { name: "Delete connection" }).click();
    const confirm = page.getByRole("alertdialog", { name: "Delete Globex mail?" });
    expect(await text(confirm)).toContain("mail sent to it is refused");
    expect(await text(confirm)).toContain("its notification preferences");
    await confirm.getByRole("button", { name: "Delete Globex mail for good" }).click();
    await page.getByRole("heading", { name: "Connections" }).waitFor();
    await page.getByRole("link", { name: "Acme partner" }).waitFor();
    expect(await page.getByRole("link", { name: "Globex mail" }).count()).toBe(0);
  }, 60_000);

  test("create a schema: the service checks the definition as it is typed; a sample file drafts it", async () => {
    await nav("Schemas");
    await page.getByRole("link", { name: "New schema" }).click();
    await page.getByLabel("Schema name").fill("Items");
    const definition = page.getByLabel("Definition (JSON Schema)");
    const check = page.getByRole("status", { name: "Definition check" });
    await definition.fill('{"type": "array", "items": {}}');
    await until(async () => (await text(check)) === "definition.type: must be 'object' (a schema describes one row)");
    await definition.fill('{"type": "object", "properties": {"sku": {"type": "strin"}}}');
    await until(async () => (await text(check)).startsWith("definition.properties.sku.type: must be equal to one of the allowed values"));
    await definition.fill('{"type": "object", ');
    await until(async () => (await text(check)).startsWith("Not JSON yet:"));
    await page.getByLabel("Infer from a sample file").setInputFiles({ name: "items.csv", mimeType: "text/csv", buffer: Buffer.from(CSV) });
    await page.getByText("Drafted from 3 rows (csv)").waitFor();
    await until(async () => (await text(check)) === "Valid: a save would accept this definition.");
    expect(JSON.parse(await definition.inputValue()).properties).toMatchObject({ sku: { type: "string" }, qty: { type: "integer" }, name: { type: "string" } });
    await page.getByRole("button", { name: "Create schema" }).click();
    await until(async () => /\/setup\/schemas\/sch_/.test(page.url()));
    await page.getByRole("heading", { name: "Items" }).waitFor();
    await page.getByText("No pipeline uses it yet.").waitFor();
    schemaId = page.url().split("/").pop()!;
    await until(async () => (await text(check)) === "Valid: a save would accept this definition.");
    await shot(page, "schema");
  }, 60_000);

  test("set notification preferences with the API's rules", async () => {
    await nav("API keys");
    await page.getByLabel("Key name").fill("setup");
    await page.getByLabel("Key role").selectOption("admin");
    await page.getByRole("button", { name: "Create key" }).click();
    const apiKey = (await text(page.getByLabel("New API key"))).trim();
    const actor = await authenticate(h.svc, { apiKey });
    ws = { workspaceId: actor.workspaceId, apiKey, keyId: actor.keyId!, actor };

    await nav("Notifications");
    await page.getByLabel("Connection", { exact: true }).selectOption({ label: "Acme partner" });
    const failed = page.getByRole("group", { name: "A run failed" });
    await failed.getByLabel("SMS", { exact: true }).check();
    await failed.getByLabel("SMS recipients").fill("555-1234");
    await page.getByRole("button", { name: "Save preferences" }).click();
    expect(await text(page.getByRole("alert"))).toContain("'555-1234' is not a phone number in E.164 form");
    expect(await getNotificationPreferences(h.svc, { actor, clientId: connectionId })).toEqual([]);

    await failed.getByLabel("SMS", { exact: true }).uncheck();
    await failed.getByLabel("E-mail", { exact: true }).check();
    await failed.getByLabel("E-mail recipients").fill("ops@acme-setup.com, Lead@Acme-Setup.com");
    // With the keyboard alone: Space ticks the box, Tab moves to its recipients, Enter saves.
    await page.getByRole("group", { name: "A run succeeded" }).getByLabel("E-mail", { exact: true }).focus();
    await page.keyboard.press("Space");
    await page.keyboard.press("Tab");
    await page.keyboard.type("ops@acme-setup.com");
    await page.keyboard.press("Enter");
    await page.getByText("Preferences saved.").waitFor();
    const stored = await getNotificationPreferences(h.svc, { actor, clientId: connectionId });
    expect(stored.map((p) => [p.eventType, p.channel, p.isEnabled, p.recipients])).toEqual([
      ["PIPELINE_RUN_FAILED", "EMAIL", true, ["ops@acme-setup.com", "Lead@Acme-Setup.com"]],
      ["PIPELINE_RUN_SUCCEEDED", "EMAIL", true, ["ops@acme-setup.com"]],
    ]);
    // A reload shows what is stored.
    await page.reload();
    expect(await page.getByRole("group", { name: "A run failed" }).getByLabel("E-mail recipients").inputValue()).toBe("ops@acme-setup.com, Lead@Acme-Setup.com");
    await shot(page, "notifications");
  }, 60_000);

  test("create a webhook (secret shown once, rotated), link it, and see its signed delivery logged, then redeliver", async () => {
    await nav("Webhooks");
    await page.getByLabel("Webhook name").fill("Ops receiver");
    await page.getByLabel("Receiver URL").fill(receiver.url);
    await page.getByRole("button", { name: "Create webhook" }).click();
    const first = await text(page.getByLabel("Signing secret", { exact: true }));
    expect(first).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Rotate secret of Ops receiver" }).click();
    await until(async () => (await text(page.getByLabel("Signing secret", { exact: true }))) !== first);
    const secret = await text(page.getByLabel("Signing secret", { exact: true }));
    expect(secret).toMatch(/^whsec_/);
    await shot(page, "webhooks");

    const hooks = await h.ok(ws, "GET", "/webhooks");
    const webhookId = hooks.data.find((w: { name: string }) => w.name === "Ops receiver").id as string;
    const pipeline = await h.ok(ws, "POST", "/pipelines", {
      name: "Acme items",
      clientId: connectionId,
      schemaId,
      mappings: ITEM_MAPPINGS,
      webhookIds: [webhookId],
    });
    const form = new FormData();
    form.append("file", new File([CSV], "batch-1.csv", { type: "text/csv" }));
    const started = await fetch(`${web.url}/pipelines/${pipeline.id}/runs`, { method: "POST", headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25" }, body: form });
    expect(started.status).toBe(200);
    await until(async () => receiver.received.length >= 1, 30_000);
    // Signed with the secret the page showed after rotation.
    const got = receiver.received[0]!;
    expect(() => new Verifier(secret).verify(got.body, got.headers)).not.toThrow();
    expect(JSON.parse(got.body).type).toBe("pipeline_run.completed");

    await page.getByRole("link", { name: "Ops receiver" }).click();
    await page.getByRole("heading", { name: "Ops receiver" }).waitFor();
    const log = page.getByRole("region", { name: "Deliveries" });
    await until(async () => {
      await log.getByRole("button", { name: "Refresh deliveries" }).click();
      return (await log.getByRole("cell", { name: "pipeline_run.completed" }).count()) > 0;
    });
    const row = log.getByRole("row").filter({ has: page.getByRole("cell", { name: "pipeline_run.completed" }) });
    expect(await text(row.getByRole("cell").nth(2))).toBe("delivered");
    expect(await text(row.getByRole("cell").nth(3))).toBe("200");
    expect(await text(row.getByRole("cell").nth(4))).toMatch(/^\d+ ms$/);
    await row.getByRole("button", { name: "Redeliver" }).click();
    await until(async () => (await row.getByRole("listitem").count()) === 2);
    expect(await text(row.getByRole("listitem").first())).toContain("manual, ok 200");
    expect(receiver.received.length).toBeGreaterThanOrEqual(2);
    await shot(page, "webhook");

    // The run's success was also sent to the preference's recipient; the sends list shows its outcome.
    await nav("Notifications");
    const sends = page.getByRole("region", { name: "Sends" });
    await until(async () => {
      await sends.getByRole("button", { name: "Refresh sends" }).click();
      return (await sends.getByRole("cell", { name: "ops@acme-setup.com" }).count()) > 0;
    }, 30_000);
    const send = sends.getByRole("row").filter({ has: page.getByRole("cell", { name: "ops@acme-setup.com" }) });
    expect(await text(send.getByRole("cell").nth(1))).toBe("PIPELINE_RUN_SUCCEEDED");
    expect(await text(send.getByRole("cell").nth(5))).toMatch(/^(pending|sent|failed)$/);

    // The schema's page lists the pipeline that now uses it.
    await nav("Schemas");
    await page.getByRole("link", { name: "Items" }).click();
    await page.getByRole("region", { name: "Used by" }).getByText("Acme items (inbound)").waitFor();
  }, 90_000);

  test("send a CSV file through an outbound pipeline; the session shows completed and its file is delivered to the partner's space", async () => {
    await h.ok(ws, "POST", "/pipelines", { name: "Acme orders out", clientId: connectionId, schemaId, direction: "outbound", mappings: ITEM_MAPPINGS });
    await nav("Outbound");
    await page.getByLabel("Outbound pipeline").selectOption({ label: "Acme orders out (Acme partner)" });
    await page.getByLabel("JSON or CSV file").setInputFiles({ name: "orders.csv", mimeType: "text/csv", buffer: Buffer.from(CSV) });
    await page.getByLabel("Delivered file name (optional)").fill("acme-orders.csv");
    await page.getByRole("button", { name: "Send file" }).click();
    await page.getByText("delivers acme-orders.csv (csv)").waitFor();
    const sessions = page.getByRole("region", { name: "Upload sessions" });
    const row = sessions.getByRole("row").filter({ hasText: "Acme orders out" });
    await until(async () => {
      await sessions.getByRole("button", { name: "Refresh sessions" }).click();
      return (await row.getByText("delivered").count()) > 0;
    }, 30_000);
    expect(await text(row.getByRole("cell").nth(3))).toBe("completed");
    expect(await text(row.getByRole("cell").nth(4))).toBe("1 of 1");
    await shot(page, "outbound");
    const r = await sftpBatch({ port: sftp.port, user: sftp.user, password: sftp.password }, ["ls -1 outbound"]);
    expect(r.stdout).toContain("acme-orders.csv");
  }, 60_000);

  test("every change the person made is in the audit log; the pages read at 390 px; no console errors", async () => {
    const page1 = await listAuditEvents(h.svc, { actor: ws.actor, query: { limit: 100 } });
    const byPerson = page1.items.filter((e) => e.actorName === EMAIL).map((e) => e.action);
    for (const action of ["connection.create", "connection.delete", "schema.create", "notificationPreferences.update", "webhook.create", "webhook.rotateSecret", "webhookDelivery.redeliver", "outboundUpload.create", "outboundUpload.complete"]) {
      expect(byPerson).toContain(action);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    await nav("Connections");
    await page.getByRole("link", { name: "Acme partner" }).waitFor();
    await shot(page, "connections-390");
    await nav("Webhooks");
    await page.getByRole("link", { name: "Ops receiver" }).waitFor();
    await shot(page, "webhooks-390");
    await context.close();
    expect(consoleErrors).toEqual([]);
  }, 60_000);
});
