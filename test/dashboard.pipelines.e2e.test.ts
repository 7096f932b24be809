import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launchChromium, newPage, shot, signUp, text, until } from "./helpers/browser";
import { Harness } from "./helpers/harness";
import { type Instance, secondInstance } from "./helpers/instances";
import { Receiver } from "./helpers/receiver";

/**
 * The pipelines and documents pages in Debian's headless Chromium against
 * the service as `npm start` runs it: a pipeline built by mapping a sample
 * file (one column renamed by hand, one transform), the preview following
 * each change before saving; saved; then a file dropped into the
 * connection's inbound folder on the documents page starts its run, seen
 * completed on the runs console. Found by label and role; photographed.
 */
const PASSWORD = "a sturdy passphrase 7";
const SAMPLE = "Item Code,qty,Name\na-1,3,Bolt\nb-2,ten,Nut\nc-3,7,Washer\n";
const SCHEMA = {
  type: "object",
  properties: { sku: { type: "string" }, qty: { type: "integer" }, name: { type: "string" } },
  required: ["sku", "qty"],
};

let h: Harness;
let web: Instance;
let receiver: Receiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];
let apiKey: string;
let pipelineId: string;

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${web.url}${path}`, {
    method,
    headers: { "x-api-key": apiKey, "service-version": "2026-05-25", ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};

/** The preview table's cell for a target field in the first data row. */
const firstRowCell = async (column: number) => text(page.getByRole("table", { name: "Preview rows" }).getByRole("row").nth(1).getByRole("cell").nth(column));

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  // Files over 1 MiB go in parts, so the browser's multipart path is exercised with small files.
  web = await secondInstance(h, { DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: String(1024 * 1024), WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  receiver = await Receiver.start();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  receiver?.stop();
  await h?.close();
});

describe("pipelines and documents in the browser", () => {
  test("set up: sign up, a key, a hosted connection and a schema", async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await newPage(context, consoleErrors);
    await signUp(page, web.url, { workspace: "Mapping Co", name: "Mo Mapper", email: "mo@mapping-co.com", password: PASSWORD });
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Key name").fill("setup");
    await page.getByLabel("Key role").selectOption("admin");
    await page.getByRole("button", { name: "Create key" }).click();
    apiKey = (await text(page.getByLabel("New API key")))!;
    await api("POST", "/connections", { name: "Parts partner", type: "SFTP", useHostedSFTP: true });
    await api("POST", "/schemas", { name: "Parts", definition: SCHEMA });
    await api("POST", "/webhooks", { name: "Ops hook", url: receiver.url, eventTypes: ["pipeline_run.completed"] });
  }, 60_000);

  test("map a sample file: auto-paired names, a renamed column by hand, a transform; the preview follows each change", async () => {
    await page.getByRole("link", { name: "Pipelines" }).click();
    await page.getByRole("link", { name: "New pipeline" }).click();
    await page.getByLabel("Pipeline name").fill("Parts in");
    await until(async () => (await page.getByLabel("Schema").inputValue()).startsWith("sch"));
    await page.getByRole("group", { name: "sku" }).waitFor();
    const dataTransfer = await page.evaluateHandle((csv) => {
      const dt = new DataTransfer();
      dt.items.add(new File([csv], "parts.csv", { type: "text/csv" }));
      return dt;
    }, SAMPLE);
    await page.getByRole("region", { name: "Sample file drop zone" }).dispatchEvent("drop", { dataTransfer });
    await page.getByRole("list", { name: "Source columns" }).getByText("Item Code").waitFor();

    // Exact (qty) and normalized (Name -> name) names pair themselves; "Item Code" does not match "sku".
    await until(async () => (await page.getByRole("group", { name: "qty" }).getByLabel("Column").inputValue()) === "qty");
    expect(await page.getByRole("group", { name: "name" }).getByLabel("Column").inputValue()).toBe("Name");
    expect(await page.getByRole("group", { name: "sku" }).getByLabel("Map from").inputValue()).toBe("none");
    // Without sku every row lacks a required field.
    await until(async () => (await firstRowCell(4)).includes("sku"));
    expect(await firstRowCell(1)).toBe("");

    const sku = page.getByRole("group", { name: "sku" });
    await sku.getByLabel("Map from").selectOption("column");
    await sku.getByLabel("Column").selectOption("Item Code");
    await until(async () => (await firstRowCell(1)) === "a-1");
    expect(await firstRowCell(4)).toBe("");
    await sku.getByLabel("Transform").selectOption("uppercase");
    await until(async () => (await firstRowCell(1)) === "A-1");
    expect(await text(page.getByRole("table", { name: "Preview rows" }).getByRole("row").nth(2))).toContain("qty");

    // A bad row is skipped instead of failing the run: the preview's verdict changes.
    await until(async () => (await text(page.getByLabel("Preview summary"))).includes("failed"));
    await page.getByLabel("A row that fails validation").selectOption("skip");
    await until(async () => (await text(page.getByLabel("Preview summary"))).includes("completed"));
    expect(await text(page.getByLabel("Preview summary"))).toContain("3 read, 2 valid, 1 invalid");
    await shot(page, "mapping-editor");
  }, 60_000);

  test("save: the pipeline is stored with its mappings and reopens as saved", async () => {
    await page.getByLabel(/^Ops hook/).check();
    await page.getByRole("button", { name: "Create pipeline" }).click();
    await page.getByText(/^Saved at .* as version 1\.$/).waitFor();
    pipelineId = new URL(page.url()).pathname.split("/").pop()!;
    expect(pipelineId).toMatch(/^pipe_/);
    const saved = await api("GET", `/pipelines/${pipelineId}`);
    expect(saved).toMatchObject({ name: "Parts in", direction: "inbound", isActive: true, mappings: { validations: { onInvalidRow: "skip" } } });
    expect(saved.webhooks).toEqual([expect.objectContaining({ name: "Ops hook" })]);
    expect(saved.mappings.fieldMappings).toEqual(
      expect.arrayContaining([
        { target: "sku", source: "Item Code", transform: "uppercase" },
        { target: "qty", source: "qty" },
        { target: "name", source: "Name" },
      ]),
    );
    await page.reload();
    await page.getByRole("heading", { name: "Pipeline Parts in" }).waitFor();
    await until(async () => (await page.getByRole("group", { name: "sku" }).getByLabel("Column").inputValue()) === "Item Code");
    expect(await page.getByRole("group", { name: "sku" }).getByLabel("Transform").inputValue()).toBe("uppercase");
    const versions = page.getByRole("table", { name: "Versions" });
    expect(await text(versions.getByRole("row").nth(1))).toContain("created");

    // A change of a mapping makes version 2, listed with what changed; a name change alone makes none.
    await page.getByRole("group", { name: "name" }).getByLabel("Transform").selectOption("trim");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText(/^Saved at .* as version 2\.$/).waitFor();
    await until(async () => (await versions.getByRole("row").count()) === 3);
    expect(await text(versions.getByRole("row").nth(1))).toMatch(/^2\s*edited\s*changed name/);
    await page.getByLabel("Pipeline name").fill("Parts in (renamed)");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText(/still version 2/).waitFor();
    await page.getByLabel("Pipeline name").fill("Parts in");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText(/still version 2/).waitFor();
    const listed2 = await api("GET", `/pipelines/${pipelineId}/versions`);
    expect((Array.isArray(listed2) ? listed2 : listed2.data).map((v: { version: number }) => v.version)).toEqual([2, 1]);
    await shot(page, "pipeline-versions");
    await page.getByRole("link", { name: "All pipelines" }).click();
    const listed = page.getByRole("row").filter({ has: page.getByRole("link", { name: "Parts in" }) });
    expect(await listed.getByRole("link", { name: "Ops hook" }).getAttribute("href")).toBe(`/setup/webhooks/${saved.webhooks[0].id}`);
    await shot(page, "pipelines");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("link", { name: "Parts in" }).click();
    await page.getByRole("group", { name: "sku" }).waitFor();
    await shot(page, "mapping-editor-390");
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 60_000);

  test("as an admin, drop a file into the inbound folder on the documents page: its run completes on the runs console", async () => {
    await page.getByRole("link", { name: "Documents" }).click();
    const inbound = page.getByRole("row").filter({ has: page.getByRole("button", { name: "inbound/" }) });
    expect(await text(inbound)).toContain("pipeline folder");
    await inbound.getByRole("button", { name: "inbound/" }).click();
    await page.getByText("This folder is empty.").waitFor();
    // Without force the protected folder refuses the upload, with the service's message.
    const drop = async (name: string) => {
      const dt = await page.evaluateHandle(
        ([csv, file]) => {
          const d = new DataTransfer();
          d.items.add(new File([csv!], file!, { type: "text/csv" }));
          return d;
        },
        [SAMPLE, name],
      );
      await page.getByRole("region", { name: "Documents drop zone" }).dispatchEvent("drop", { dataTransfer: dt });
    };
    await drop("refused.csv");
    expect(await text(page.getByRole("alert"))).toContain("send force: true with an admin key");
    await page.getByLabel("Allow changes to pipeline folders (force)").check();
    await drop("dropped.csv");
    await page.getByRole("listitem").filter({ hasText: "dropped.csv" }).getByText("uploaded").waitFor();
    expect(await page.getByRole("progressbar", { name: "Upload of dropped.csv" }).getAttribute("value")).toBe("100");
    await page.getByRole("row").filter({ hasText: "dropped.csv" }).waitFor();
    await shot(page, "documents");

    await page.getByRole("link", { name: "Runs", exact: true }).click();
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "dropped.csv" }) });
    await row.getByText("completed").waitFor({ timeout: 30_000 });
    await shot(page, "runs-from-documents");
    const runs = await api("GET", `/pipeline-runs?pipelineId=${pipelineId}`);
    expect(runs.data).toHaveLength(1);
    expect(runs.data[0]).toMatchObject({ filename: "dropped.csv", status: "completed" });
    // The webhook linked on the pipeline's page is told of the completed run.
    await until(async () => receiver.received.some((r) => JSON.parse(r.body).type === "pipeline_run.completed" && r.body.includes(runs.data[0].id)));
    const arrivals = await api("GET", `/connections/${runs.data[0].clientId ?? (await api("GET", `/pipelines/${pipelineId}`)).clientId}/arrivals`);
    expect(arrivals.data[0]).toMatchObject({ transport: "documents", filename: "dropped.csv", outcome: "started" });
  }, 90_000);

  test("a member is not offered force: the pipeline folder refuses their upload", async () => {
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByLabel("E-mail to invite").fill("mia@mapping-co.com");
    await page.getByRole("button", { name: "Invite" }).click();
    const link = await text(page.getByRole("status").locator("code"));
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p2 = await newPage(other, consoleErrors);
    await p2.goto(link);
    await p2.getByLabel("Your name (new accounts only)").fill("Mia Member");
    await p2.getByLabel("Password (your current one if you have an account)").fill(PASSWORD);
    await p2.getByRole("button", { name: "Join" }).click();
    await p2.getByRole("heading", { name: "Runs" }).waitFor();
    await p2.getByRole("link", { name: "Documents" }).click();
    await p2.getByText("Pipeline folders are changed by admins only.").waitFor();
    expect(await p2.getByLabel("Allow changes to pipeline folders (force)").count()).toBe(0);
    await p2.getByRole("button", { name: "inbound/" }).click();
    await p2.getByRole("row").filter({ hasText: "dropped.csv" }).waitFor();
    const dt = await p2.evaluateHandle(() => {
      const d = new DataTransfer();
      d.items.add(new File(["x\n"], "member.csv", { type: "text/csv" }));
      return d;
    });
    await p2.getByRole("region", { name: "Documents drop zone" }).dispatchEvent("drop", { dataTransfer: dt });
    expect(await text(p2.getByRole("alert"))).toContain("send force: true with an admin key");
    await shot(p2, "documents-member");
    await other.close();
  }, 60_000);

  test("documents: make a folder, rename, move and bulk delete", async () => {
    await page.getByRole("link", { name: "Documents" }).click();
    await page.getByRole("button", { name: "inbound/" }).waitFor();
    await page.getByLabel("New folder name").fill("reports");
    await page.getByRole("button", { name: "Create folder" }).click();
    await page.getByRole("button", { name: "reports/" }).click();
    await page.getByLabel("Allow changes to pipeline folders (force)").uncheck();
    const dt = await page.evaluateHandle(() => {
      const d = new DataTransfer();
      d.items.add(new File(["a,b\n1,2\n"], "q1.csv", { type: "text/csv" }));
      d.items.add(new File(["a,b\n3,4\n"], "q2.csv", { type: "text/csv" }));
      return d;
    });
    await page.getByRole("region", { name: "Documents drop zone" }).dispatchEvent("drop", { dataTransfer: dt });
    await page.getByRole("row").filter({ hasText: "q2.csv" }).waitFor();
    await page.getByRole("row").filter({ hasText: "q1.csv" }).waitFor();

    // Over the single-upload limit: in parts (2 MiB in one 8 MiB part; 48 MiB in six), with progress; the large one aborted.
    const big = await page.evaluateHandle(() => {
      const d = new DataTransfer();
      d.items.add(new File([new Uint8Array(2 * 1024 * 1024).fill(65)], "parts.bin"));
      d.items.add(new File([new Uint8Array(48 * 1024 * 1024).fill(66)], "huge.bin"));
      return d;
    });
    await page.getByRole("region", { name: "Documents drop zone" }).dispatchEvent("drop", { dataTransfer: big });
    await page.getByRole("button", { name: "Abort huge.bin" }).click();
    await page.getByRole("listitem").filter({ hasText: "huge.bin" }).getByText("aborted").waitFor();
    await page.getByRole("listitem").filter({ hasText: "parts.bin" }).getByText("uploaded").waitFor();
    expect(await text(page.getByRole("row").filter({ hasText: "parts.bin" }))).toContain("2.0 MB");
    expect(await page.getByRole("row").filter({ hasText: "huge.bin" }).count()).toBe(0);
    await page.getByRole("button", { name: "Rename q1.csv" }).click();
    await page.getByLabel("New name").fill("2026-q1.csv");
    await page.getByRole("button", { name: "Rename", exact: true }).click();
    await page.getByRole("row").filter({ hasText: "2026-q1.csv" }).waitFor();
    await page.getByRole("button", { name: "Move q2.csv" }).click();
    await page.getByLabel("Move to").fill("archive/q2.csv");
    await page.getByRole("button", { name: "Move", exact: true }).click();
    await until(async () => (await page.getByRole("row").filter({ hasText: "q2.csv" }).count()) === 0);
    await page.getByRole("button", { name: "Root" }).click();
    await page.getByLabel("Select archive").check();
    await page.getByLabel("Select reports").check();
    await page.getByRole("button", { name: "Delete selected (2)" }).click();
    await page.getByText("2 deleted.").waitFor();
    await until(async () => (await page.getByRole("button", { name: "reports/" }).count()) === 0);
  }, 60_000);

  test("an outbound pipeline: JSON rows mapped, the delivered format chosen; no console errors on any page", async () => {
    await page.getByRole("link", { name: "Pipelines" }).first().click();
    await page.getByRole("link", { name: "New pipeline" }).click();
    await page.getByLabel("Pipeline name").fill("Parts out");
    await page.getByLabel("Direction").selectOption("outbound");
    await page.getByLabel("Delivered format").selectOption("csv");
    const dt = await page.evaluateHandle(() => {
      const d = new DataTransfer();
      d.items.add(new File([JSON.stringify([{ sku: "z-9", qty: 2, name: "Cog" }])], "out.json", { type: "application/json" }));
      return d;
    });
    await page.getByRole("region", { name: "Sample file drop zone" }).dispatchEvent("drop", { dataTransfer: dt });
    await until(async () => (await page.getByRole("group", { name: "sku" }).getByLabel("Column").inputValue()) === "sku");
    await page.getByRole("group", { name: "sku" }).getByLabel("Transform").selectOption("uppercase");
    await until(async () => (await firstRowCell(1)) === "Z-9");
    await page.getByRole("button", { name: "Create pipeline" }).click();
    await page.getByText(/^Saved at /).waitFor();
    const id = new URL(page.url()).pathname.split("/").pop()!;
    const saved = await api("GET", `/pipelines/${id}`);
    expect(saved).toMatchObject({ name: "Parts out", direction: "outbound", mappings: { options: { outputFormat: "csv" } } });
    expect(saved.mappings.fieldMappings).toContainEqual({ target: "sku", source: "sku", transform: "uppercase" });
    expect(consoleErrors).toEqual([]);
    await context.close();
  }, 60_000);
});
