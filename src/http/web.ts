import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Elysia } from "elysia";
import type { StorageConfig } from "../adapters/storage/port";
import { AppError } from "../domain/errors";
import type { Logger } from "../logger";

const ROOT = join(import.meta.dir, "..", "..");
const WEB = join(ROOT, "web");
const CACHE = join(ROOT, "build", "web");

/** The dashboard's pages: each answers the same HTML, the app picks the page from the path. */
export const DASHBOARD_PATHS = ["/", "/login", "/signup", "/verify", "/invite", "/runs", "/runs/:id", "/upload", "/members", "/keys", "/settings"];
/** The setup pages live under /setup/, as /connections, /schemas, /webhooks ... are the REST API's. */
DASHBOARD_PATHS.push("/setup/connections", "/setup/connections/:id", "/setup/schemas", "/setup/schemas/:id", "/setup/webhooks", "/setup/webhooks/:id", "/setup/notifications", "/setup/outbound");

interface Bundle {
  html: string;
  assets: Map<string, { body: Uint8Array; type: string }>;
}

function sourcesHash(): string {
  const h = createHash("sha256");
  h.update(Bun.version);
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else h.update(relative(WEB, p)).update(readFileSync(p));
    }
  };
  walk(WEB);
  // The packages it bundles: a new install changes the bundle.
  h.update(readFileSync(join(ROOT, "package-lock.json")));
  return h.digest("hex").slice(0, 16);
}

/**
 * The dashboard (web/) bundled by Bun's bundler when the service starts,
 * into build/web/<hash of the sources>/: a start with unchanged sources
 * reuses it, so there is no build step for the user and no CDN.
 */
async function buildBundle(log: Logger): Promise<Bundle> {
  const dir = join(CACHE, sourcesHash());
  if (!existsSync(join(dir, "manifest.json"))) {
    const t0 = performance.now();
    const out = await Bun.build({
      entrypoints: [join(WEB, "main.tsx")],
      target: "browser",
      minify: true,
      naming: { entry: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]" },
      define: { "process.env.NODE_ENV": '"production"' },
    });
    if (!out.success) throw new Error(`the dashboard did not build: ${out.logs.map(String).join("\n")}`);
    const tmp = `${dir}.${process.pid}.tmp`;
    mkdirSync(tmp, { recursive: true });
    const files: string[] = [];
    for (const o of out.outputs) {
      const name = o.path.replace(/^.*[\\/]/, "");
      writeFileSync(join(tmp, name), new Uint8Array(await o.arrayBuffer()));
      files.push(name);
    }
    writeFileSync(join(tmp, "manifest.json"), JSON.stringify(files));
    try {
      renameSync(tmp, dir);
    } catch {
      // Another process built the same sources first.
      rmSync(tmp, { recursive: true, force: true });
    }
    log.info({ ms: Math.round(performance.now() - t0) }, "dashboard built");
  }
  const files = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as string[];
  const assets = new Map<string, { body: Uint8Array; type: string }>();
  for (const f of files) {
    assets.set(f, { body: readFileSync(join(dir, f)), type: f.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8" });
  }
  const css = files.filter((f) => f.endsWith(".css")).map((f) => `<link rel="stylesheet" href="/assets/${f}">`);
  const js = files.filter((f) => f.endsWith(".js") && f.startsWith("main-")).map((f) => `<script type="module" src="/assets/${f}"></script>`);
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>File Pipeline</title>
<link rel="icon" href="data:,">
${css.join("\n")}
</head>
<body>
<div id="root"></div>
${js.join("\n")}
</body>
</html>
`;
  return { html, assets };
}

/** GET / and the dashboard's other pages (the same HTML), and its assets under /assets/, cached for good (names carry their hash). */
/** The pipelines (mapping editor) and documents pages, under /setup/ as /pipelines and /documents are the REST API's. */
DASHBOARD_PATHS.push("/setup/pipelines", "/setup/pipelines/new", "/setup/pipelines/:id", "/setup/documents");

export function dashboardRoutes(log: Logger, storage?: StorageConfig) {
  const csp = `default-src 'self'; connect-src ${["'self'", ...(storage ? linkOrigins(storage) : [])].join(" ")}; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'`;
  let bundle: Promise<Bundle> | null = null;
  const get = () => {
    bundle ??= buildBundle(log).catch((e) => {
      bundle = null;
      throw e;
    });
    return bundle;
  };
  // Started at once, so the first visitor does not wait for it.
  setTimeout(() => get().catch((e) => log.error({ err: e }, "the dashboard did not build")), 0);
  const app = new Elysia({ name: "dashboard" }).get(
    "/assets/:file",
    async ({ params, set }) => {
      const asset = (await get()).assets.get(params.file);
      if (!asset) throw new AppError("not_found", `no asset '${params.file}'`);
      set.headers["content-type"] = asset.type;
      set.headers["cache-control"] = "public, max-age=31536000, immutable";
      return asset.body;
    },
    { detail: { hide: true } },
  );
  for (const path of DASHBOARD_PATHS) {
    app.get(
      path,
      async ({ set }) => {
        set.headers["content-type"] = "text/html; charset=utf-8";
        set.headers["cache-control"] = "no-cache";
        set.headers["content-security-policy"] = csp;
        set.headers["x-frame-options"] = "DENY";
        return (await get()).html;
      },
      { detail: { hide: true } },
    );
  }
  return app;
}

/**
 * Where presigned links point, which the documents page PUTs files to and
 * the browser must be allowed to reach: the service's PUBLIC_URL (local
 * store) or the bucket's host (S3, which also needs a CORS rule allowing
 * PUT from the dashboard's origin and exposing ETag; docs/decisions/dashboard.md).
 */
export function linkOrigins(storage: StorageConfig): string[] {
  if (storage.kind === "local") return [new URL(storage.publicUrl).origin];
  if (storage.endpoint) {
    const u = new URL(storage.endpoint);
    return storage.forcePathStyle ? [u.origin] : [u.origin, `${u.protocol}//${storage.bucket}.${u.host}`];
  }
  return [`https://${storage.bucket}.s3.${storage.region}.amazonaws.com`, `https://s3.${storage.region}.amazonaws.com`];
}
