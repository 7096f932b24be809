// Writes the REST client's generated part from the service's own OpenAPI document:
// packages/client/openapi.json (the document as the service serves it) and
// packages/client/src/schema.d.ts (openapi-typescript with its default options).
// `npm run client:generate` after changing a route; test/client.generated.test.ts fails until it is run.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createService } from "../src/app";
import { parseConfig } from "../src/config";
import { createLogger } from "../src/logger";

const ROOT = join(import.meta.dir, "..");
export const CLIENT_DIR = join(ROOT, "packages", "client");
const GENERATOR = join(CLIENT_DIR, "node_modules", ".bin", "openapi-typescript");

/** The document a fresh embedded service serves at /openapi.json (with the public URL every clone uses by default). */
export async function serviceDocument(): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), "fps-openapi-"));
  const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: "silent", PUBLIC_URL: "http://localhost:3000" });
  const service = await createService({ config, log: createLogger("silent"), startJobs: false });
  try {
    const res = await service.http.handle(new Request("http://localhost/openapi.json"));
    if (res.status !== 200) throw new Error(`/openapi.json answered ${res.status}`);
    // Components come in the order their shapes were first named, which depends on what the process loaded
    // before: sorted, so the document (and the types made from it) is the same whoever generates it.
    const doc = (await res.json()) as { components?: Record<string, Record<string, unknown>> };
    for (const [kind, map] of Object.entries(doc.components ?? {})) {
      doc.components![kind] = Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return `${JSON.stringify(doc, null, 2)}\n`;
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Writes the document and its types into `dir` (the package, or a temp folder to compare with). */
export async function generate(dir: string): Promise<void> {
  const doc = await serviceDocument();
  writeFileSync(join(dir, "openapi.json"), doc);
  const run = Bun.spawnSync([GENERATOR, join(dir, "openapi.json"), "-o", join(dir, "src", "schema.d.ts")], { stderr: "pipe", stdout: "pipe" });
  if (run.exitCode !== 0) throw new Error(`openapi-typescript failed: ${run.stderr.toString()}`);
}

if (import.meta.main) {
  await generate(CLIENT_DIR);
  console.log(`wrote ${join(CLIENT_DIR, "openapi.json")} and ${join(CLIENT_DIR, "src", "schema.d.ts")}`);
}
