import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";

/**
 * The dashboard tests' browser: Debian's headless Chromium driven by
 * playwright-core (no browser download). Pages are found by label and role,
 * as a person finds them; pages checked are photographed into
 * docs/screenshots/.
 */
export const SHOTS = join(import.meta.dir, "..", "..", "docs", "screenshots");
export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
}

/** A page whose page errors and console errors are collected into `errors`. */
export async function newPage(context: BrowserContext, errors: string[]): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    // A refused request the test provokes (the free-mail sign-up, the foreign run) is logged by the browser itself.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
  });
  return page;
}

/** The element's text once it is there. */
export async function text(loc: Locator): Promise<string> {
  await loc.waitFor();
  return ((await loc.textContent()) ?? "").trim();
}

/** Waits until `probe` holds (the page updates by itself). */
export async function until(probe: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await probe().catch(() => false))) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms: ${probe}`);
    await Bun.sleep(100);
  }
}

export const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** Signs up a workspace and its first admin through the sign-up page; the page ends on the runs console. */
export async function signUp(page: Page, base: string, who: { workspace: string; name: string; email: string; password: string }): Promise<void> {
  await page.goto(`${base}/signup`);
  await page.getByLabel("Workspace name").fill(who.workspace);
  await page.getByLabel("Your name").fill(who.name);
  await page.getByLabel("Work e-mail").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign up" }).click();
  await page.getByRole("heading", { name: "Runs" }).waitFor();
}
