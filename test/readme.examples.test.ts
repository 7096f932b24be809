import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Webhook } from "standardwebhooks";
import { type Example, blocks, expectations, results, script } from "./helpers/examples";
import { freshDatabase, type TestDatabase } from "./helpers/database";

/**
 * The README's and the guide's shell examples, run as a reader pastes them
 * against a real `bun src/main.ts` (what `npm start` runs) on free ports with
 * its own DATA_DIR (SQLite) or database (TEST_DATABASE_URL). The rules of
 * what is run and checked are in test/helpers/examples.ts and
 * docs/guide/README.md ("How the examples are checked"). What the test
 * changes, and nothing else:
 * - `localhost:3000` and `localhost:2525` become the ports it picked;
 * - `npm` runs in the repository (the reader runs it in their clone), and the
 *   CLI gets the service's DATA_DIR / DATABASE_URL through the environment
 *   (the reader's CLI finds `./data`, the folder `npm start` uses);
 * - `npx` runs the repository's own commands (`fps`) in the temporary folder,
 *   as the reader's `npx` finds them in their clone.
 * Every example runs in one bash session in a temporary folder, README first,
 * then the guide's pages in the order of its index, so the variables the
 * README's first steps set ($KEY, $WS, $CONN, $PIPELINE, $RUN, ...) are there
 * for the guide, as they are for a reader who follows it.
 */
const ROOT = join(import.meta.dir, "..");
const GUIDE = join(ROOT, "docs/guide");
/** README sections about installing and developing the service itself: not examples of its API. */
const NOT_RUN = new Set(["Set up", "Development"]);

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

function guidePages(): string[] {
  const index = readFileSync(join(GUIDE, "README.md"), "utf8");
  const pages = [...index.matchAll(/\]\(([\w-]+\.md)\)/g)].map((m) => m[1]!);
  return [...new Set(pages)];
}

const files = ["README.md", ...guidePages().map((p) => `docs/guide/${p}`)];
const allBlocks = files.flatMap((f) => blocks(f, readFileSync(join(ROOT, f), "utf8"))).filter((b) => b.lang === "sh");
const runBlocks = allBlocks.filter((b) => !(b.file === "README.md" && NOT_RUN.has(b.heading)));
const examples: Example[] = runBlocks.flatMap((b) => b.examples);

let db: TestDatabase;
let dataDir: string;
let workDir: string;
let server: ReturnType<typeof Bun.spawn>;
let ports: { http: number; smtp: number; sftp: number };
let ran: Map<number, { code: number; output: string }>;
let stderr = "";

const place = (s: string) =>
  s.replaceAll("localhost:3000", `localhost:${ports.http}`).replaceAll("localhost:2525", `localhost:${ports.smtp}`);

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "fps-examples-"));
  workDir = mkdtempSync(join(tmpdir(), "fps-examples-cwd-"));
  db = await freshDatabase(dataDir);
  ports = { http: await freePort(), smtp: await freePort(), sftp: await freePort() };
  const env: Record<string, string> = { DATA_DIR: dataDir, ENCRYPTION_KEY: randomBytes(32).toString("base64"), LOG_LEVEL: "silent" };
  if (db.url) env.DATABASE_URL = db.url;
  server = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      ...env,
      HOST: "127.0.0.1",
      PORT: String(ports.http),
      SMTP_PORT: String(ports.smtp),
      SFTP_PORT: String(ports.sftp),
    },
    stdout: "ignore",
    stderr: "pipe",
  });
  // Read all the time, so a chatty service never blocks on a full pipe.
  const serverErr = new Response(server.stderr as ReadableStream).text();
  for (let i = 0; ; i++) {
    const up = await fetch(`http://localhost:${ports.http}/healthz`).then((r) => r.ok, () => false);
    if (up) break;
    if (i > 600) {
      server.kill();
      throw new Error(`the service did not start: ${await serverErr}`);
    }
    await Bun.sleep(100);
  }
  const prelude = `cd ${JSON.stringify(workDir)}\nnpm() { (cd ${JSON.stringify(ROOT)} && command npm "$@"); }\nnpx() { PATH=${JSON.stringify(`${ROOT}/node_modules/.bin`)}:"$PATH" command "$@"; }`;
  const shell = Bun.spawn(["bash"], {
    cwd: workDir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? workDir, ...env },
    stdin: new TextEncoder().encode(place(script(examples, prelude))),
    stdout: "pipe",
    stderr: "pipe",
  });
  const killer = setTimeout(() => shell.kill(), 240_000);
  const [out, err] = await Promise.all([new Response(shell.stdout).text(), new Response(shell.stderr).text(), shell.exited]);
  clearTimeout(killer);
  stderr = err;
  ran = results(out);
}, 300_000);

afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
});

describe("every shell example, run as pasted", () => {
  test("there are examples to run, README first steps among them", () => {
    expect(runBlocks.filter((b) => b.file === "README.md" && b.heading === "First steps").length).toBeGreaterThan(0);
    expect(examples.length).toBeGreaterThan(20);
  });

  for (const block of runBlocks) {
    test(`${block.file}:${block.line} (${block.heading})`, () => {
      for (const e of block.examples) {
        const i = examples.indexOf(e);
        const where = `${e.file}:${e.line}: ${e.command.split("\n")[0]}`;
        const r = ran.get(i);
        if (!r) throw new Error(`${where}\nnever finished (shell stderr: ${stderr.slice(-2000)})`);
        if (r.code !== 0) throw new Error(`${where}\nexited ${r.code}; output: ${r.output}\nshell stderr: ${stderr.slice(-2000)}`);
        const shown = e.expected.map(place);
        for (const s of shown) {
          for (const x of expectations(s)) {
            if (!x.re.test(r.output)) throw new Error(`${where}\nshows ${x.text}, but answered: ${r.output.slice(0, 3000)}`);
          }
        }
        const failed = /"statusCode"\s*:\s*[45]\d\d/.test(r.output);
        if (failed && !shown.some((s) => s.includes('"error"'))) throw new Error(`${where}\nanswered an error it does not show: ${r.output}`);
      }
    });
  }
});

describe("the documents name only what is in the repository", () => {
  for (const f of ["README.md", ...guidePages().map((p) => `docs/guide/${p}`)]) {
    test(`${f}: every relative link resolves, nothing points outside the repository`, () => {
      const text = readFileSync(join(ROOT, f), "utf8");
      expect(text).not.toContain("../shared");
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const path = resolve(dirname(join(ROOT, f)), target!);
        expect(path.startsWith(ROOT + "/")).toBe(true);
        if (!existsSync(path)) throw new Error(`${f}: link to ${target} does not resolve`);
      }
    });
  }

  test("every README example that talks to the API sends Service-Version: 2026-05-25", () => {
    const api = allBlocks.flatMap((b) => b.examples).filter((e) => /\bcurl\b/.test(e.command) && /localhost:3000/.test(e.command));
    expect(api.length).toBeGreaterThan(0);
    for (const e of api) if (!e.command.includes("Service-Version: 2026-05-25")) throw new Error(`${e.file}:${e.line}: no Service-Version: ${e.command}`);
  });
});

describe("the guide's code for receivers", () => {
  test("webhooks.md: the verifier written with node:crypto accepts what the service's signing library signs, and nothing else", async () => {
    const text = readFileSync(join(GUIDE, "webhooks.md"), "utf8");
    const code = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).find((c) => c.includes("createHmac"));
    expect(code).toBeDefined();
    // Written beside the repository's node_modules so its imports resolve as in a reader's project.
    const file = join(ROOT, `.guide-verify-${process.pid}.ts`);
    writeFileSync(file, `${code}\nexport { verify };\n`);
    try {
      const { verify } = (await import(file)) as { verify: (secret: string, headers: Headers, body: string) => boolean };
      const secret = `whsec_${randomBytes(32).toString("base64")}`;
      const body = JSON.stringify({ id: "evt_1", type: "pipeline_run.failed", data: { status: "failed" } });
      const now = new Date();
      const headers = new Headers({
        "webhook-id": "evt_1",
        "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
        "webhook-signature": new Webhook(secret).sign("evt_1", now, body),
      });
      expect(verify(secret, headers, body)).toBe(true);
      expect(verify(secret, headers, body.replace("failed", "completed"))).toBe(false);
      expect(verify(`whsec_${randomBytes(32).toString("base64")}`, headers, body)).toBe(false);
      // Correctly signed, but ten minutes old: refused, as the package refuses it.
      const then = new Date(now.getTime() - 600_000);
      const old = new Headers({
        "webhook-id": "evt_1",
        "webhook-timestamp": String(Math.floor(then.getTime() / 1000)),
        "webhook-signature": new Webhook(secret).sign("evt_1", then, body),
      });
      expect(verify(secret, old, body)).toBe(false);
      expect(() => new Webhook(secret).verify(body, Object.fromEntries(old))).toThrow();
    } finally {
      rmSync(file, { force: true });
    }
  });
});
