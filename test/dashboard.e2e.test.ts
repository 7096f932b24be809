import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { authenticate } from "../src/services/keys/authenticate";
import { launchChromium, newPage as openPage, shot, text, until } from "./helpers/browser";
import { testDialect } from "./helpers/database";
import { Harness } from "./helpers/harness";
import { type Instance, secondInstance } from "./helpers/instances";
import { createPipeline, ITEM_MAPPINGS } from "./helpers/runs";

/**
 * The dashboard in Debian's headless Chromium (playwright-core, no browser
 * download) against the service as `npm start` runs it, on a free port,
 * over the test database. Pages are found by label and role, as a person
 * finds them; each page checked is photographed into docs/screenshots/.
 */
const PASSWORD = "a sturdy passphrase 7";
const CSV = "SKU,Qty,Name\na-1,3,Bolt\nb-2,ten,Nut\nc-3,7,Washer\n";

let h: Harness;
let web: Instance;
let browser: Browser;
const consoleErrors: string[] = [];
const newPage = (context: BrowserContext) => openPage(context, consoleErrors);

beforeAll(async () => {
  // This process claims no jobs: the browser's instance processes the runs (on SQLite its events stay in its process).
  h = await Harness.start({ startJobs: false });
  web = await secondInstance(h);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  await h?.close();
});

describe("the dashboard, end to end", () => {
  let context: BrowserContext;
  let page: Page;
  let apiKey: string;
  let runUrl: string;

  test("sign up, a free-mail address refused, log out and log in", async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await newPage(context);
    await page.goto(`${web.url}/signup`);
    await page.getByLabel("Workspace name").fill("Acme Logistics");
    await page.getByLabel("Your name").fill("Olive Ops");
    await page.getByLabel("Work e-mail").fill("olive@acme-logistics.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await shot(page, "sign-up");
    await page.getByRole("button", { name: "Sign up" }).click();
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();

    await page.getByRole("link", { name: "Create a workspace" }).click();
    await page.getByLabel("Workspace name").fill("Private");
    await page.getByLabel("Your name").fill("Pat");
    await page.getByLabel("Work e-mail").fill("pat@gmail.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign up" }).click();
    expect(await text(page.getByRole("alert"))).toBe("email: 'gmail.com' is a personal e-mail provider; register with your company's e-mail domain");

    await page.getByRole("link", { name: "Log in" }).click();
    await page.getByLabel("E-mail").fill("olive@acme-logistics.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await shot(page, "log-in");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { name: "Runs" }).waitFor();
  }, 60_000);

  test("create an API key: shown once", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Key name").fill("setup");
    await page.getByLabel("Key role").selectOption("admin");
    await page.getByRole("button", { name: "Create key" }).click();
    apiKey = (await page.getByLabel("New API key").textContent())!.trim();
    expect(apiKey).toMatch(/^fps_/);
    await page.getByRole("cell", { name: "setup", exact: true }).waitFor();
    await shot(page, "api-keys");
  }, 30_000);

  test("upload by drag and drop, then the run completes on the console without a reload", async () => {
    const actor = await authenticate(h.svc, { apiKey });
    const { pipeline } = await createPipeline(h, { workspaceId: actor.workspaceId, apiKey, keyId: actor.keyId!, actor }, {
      name: "Acme items",
      connectionName: "Acme SFTP",
      mappings: { ...ITEM_MAPPINGS, validations: { onInvalidRow: "skip" } },
    });
    await page.getByRole("link", { name: "Upload" }).click();
    await until(async () => (await page.getByLabel("Pipeline").inputValue()).startsWith("pipe_"));
    const dataTransfer = await page.evaluateHandle((csv) => {
      const dt = new DataTransfer();
      dt.items.add(new File([csv], "items.csv", { type: "text/csv" }));
      return dt;
    }, CSV);
    await page.getByRole("region", { name: "Drop zone" }).dispatchEvent("drop", { dataTransfer });
    await page.getByRole("link", { name: "View run" }).waitFor();
    expect(await page.getByRole("progressbar", { name: "Upload of items.csv" }).getAttribute("value")).toBe("100");
    await shot(page, "upload");

    // The console is open before the next run exists: it appears and completes live.
    await page.getByRole("link", { name: "Runs", exact: true }).click();
    await page.getByText("Live: new runs").waitFor();
    const form = new FormData();
    form.append("file", new File([CSV], "second.csv", { type: "text/csv" }));
    const target = `/pipelines/${pipeline.id}/runs`;
    // On Postgres the second run enters through the other instance: live updates cross instances.
    const started =
      testDialect() === "pg"
        ? await h.service.http.handle(new Request(`http://localhost${target}`, { method: "POST", headers: { "x-api-key": apiKey, "service-version": "2026-05-25" }, body: form }))
        : await fetch(`${web.url}${target}`, { method: "POST", headers: { "x-api-key": apiKey, "service-version": "2026-05-25" }, body: form });
    expect(started.status).toBe(200);
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "second.csv" }) });
    await row.getByText("completed").waitFor({ timeout: 30_000 });
    await page.getByRole("row").filter({ has: page.getByRole("link", { name: "items.csv" }) }).getByText("completed").waitFor();
    await shot(page, "runs");
    // Filters narrow the list; clearing them brings it back.
    await page.getByLabel("Status").selectOption("failed");
    await page.getByText("No runs match.").waitFor();
    await page.getByLabel("Status").selectOption("completed");
    await page.getByLabel("Pipeline").selectOption({ label: "Acme items" });
    await page.getByRole("link", { name: "second.csv" }).waitFor();
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.getByText("Page 1 of 1 (2 runs)").waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "runs-390");
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 60_000);

  test("the run page: errors by input row, a download, a row search", async () => {
    await page.getByRole("link", { name: "items.csv" }).click();
    await until(async () => (await text(page.getByRole("status", { name: "Run status" }))) === "completed");
    runUrl = page.url();
    const errors = page.getByRole("table", { name: "Row errors" });
    expect(await text(errors.getByRole("row").nth(1).getByRole("cell").first())).toBe("2");
    expect(await text(errors.getByRole("row").nth(1).getByRole("cell").nth(1))).toBe("qty");
    const processed = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download processed" }).click();
    expect(await Bun.file((await (await processed).path())!).text()).toContain('"name":"Washer"');
    // The rejected rows: the bad row with its input row number, its errors and its values as read.
    const rejected = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download rejected rows" }).click();
    const rejects = JSON.parse(await Bun.file((await (await rejected).path())!).text());
    expect(rejects).toHaveLength(1);
    expect(rejects[0]).toMatchObject({ inputRow: 2, outcome: expect.stringMatching(/skipped|quarantined/) });
    await page.getByLabel("Value to find").fill("washer");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByText("1 matching row").waitFor();
    expect(await text(page.getByRole("table", { name: "Matching rows" }))).toContain("C-3");
    await shot(page, "run");
  }, 60_000);

  test("members and settings pages", async () => {
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByLabel("E-mail to invite").fill("ivan@acme-logistics.com");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.getByText("hand this link on").waitFor();
    await shot(page, "members");
    await page.getByRole("link", { name: "Settings" }).click();
    await until(async () => (await page.getByLabel("Default API version").inputValue()) === "2026-05-25");
    await page.getByLabel("Default API version").selectOption("2024-09-01");
    await page.getByText("Saved.").waitFor();
    await shot(page, "settings");
  }, 30_000);

  test("log out; another workspace's person gets the 404 page for this run", async () => {
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    await page.goto(runUrl);
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    // With the keyboard alone: type, Tab to the next field, Enter submits; the run's own URL then shows the run.
    await page.getByLabel("E-mail").focus();
    await page.keyboard.type("olive@acme-logistics.com");
    await page.keyboard.press("Tab");
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "items.csv" }).waitFor();
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();

    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p2 = await newPage(other);
    await p2.goto(`${web.url}/signup`);
    await p2.getByLabel("Workspace name").fill("Globex");
    await p2.getByLabel("Your name").fill("Gina");
    await p2.getByLabel("Work e-mail").fill("gina@globex-shipping.com");
    await p2.getByLabel("Password").fill(PASSWORD);
    await p2.getByRole("button", { name: "Sign up" }).click();
    await p2.getByRole("heading", { name: "Runs" }).waitFor();
    await p2.goto(runUrl);
    await p2.getByRole("heading", { name: "Not found" }).waitFor();
    await shot(p2, "not-found");
    await other.close();
    await context.close();
    expect(consoleErrors).toEqual([]);
  }, 60_000);
});
