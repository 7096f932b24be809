// A test file that leaves a server, a worker thread, a child process or an
// interval running fails, naming the file and where the thing was started
// (graphile-worker's habit). Installed by test/preload.ts.
//
// Bun 1.4.5 has no per-file hook of its own and process.getActiveResourcesInfo()
// answers [] there, so this keeps its own books: what starts these things is
// wrapped (Bun.serve, Bun.listen, Bun.spawn, node's Server.listen and
// ChildProcess.spawn, Worker, setInterval), and a plugin appends to every
// *.test.ts file an afterAll hook, which runs after the file's own afterAll
// hooks. Whatever the file started that is still open a moment later is
// reported, then closed, so the next file starts clean.
import { plugin } from "bun";
import { ChildProcess } from "node:child_process";
import { Server as HttpServer } from "node:http";
import { Server as NetServer } from "node:net";

interface Handle {
  kind: string;
  /** Where it was started: the first frames outside this file. */
  where: string;
  open(): boolean;
  close(): void;
}

/** Started for the life of the process on purpose, not per test file. */
const PROCESS_SINGLETONS = [/\/page-cache-worker\.ts$/];

/** How long closing may take after the file's own afterAll hooks (a worker's close event, a child's exit). */
const SETTLE_MS = 3_000;

let handles: Handle[] = [];

/** The stack below the wrapper that asked, without this file's frames. */
function callers(): string[] {
  return (new Error().stack ?? "")
    .split("\n")
    .slice(1)
    .filter((f) => !f.includes("open-handles.ts"))
    .map((f) => f.trim().replace(/^at /, ""));
}

function where(): string {
  return callers()
    .filter((f) => !f.includes("(node:") && !f.includes("(native"))
    .slice(0, 3)
    .join(" <- ");
}

/** Node's servers and child processes are made with Bun.listen and Bun.spawn: counted once, as node's. */
function forNode(): boolean {
  return callers()[0]?.includes("(node:") ?? false;
}

function track(kind: string, open: () => boolean, close: () => void): void {
  handles.push({ kind, where: where(), open, close });
}

// ---- servers ------------------------------------------------------------------

const serve = Bun.serve;
Bun.serve = ((options: Parameters<typeof Bun.serve>[0]) => {
  const server = serve.call(Bun, options as never);
  if (forNode()) return server;
  let stopped = false;
  const stop = server.stop.bind(server);
  server.stop = ((closeActive?: boolean) => {
    stopped = true;
    return stop(closeActive);
  }) as typeof server.stop;
  track(`Bun.serve on port ${server.port}`, () => !stopped, () => void server.stop(true));
  return server;
}) as typeof Bun.serve;

const listen = Bun.listen;
Bun.listen = ((options: Parameters<typeof Bun.listen>[0]) => {
  const listener = listen.call(Bun, options as never);
  if (forNode()) return listener;
  let stopped = false;
  const stop = listener.stop.bind(listener);
  listener.stop = ((closeActive?: boolean) => {
    stopped = true;
    return stop(closeActive);
  }) as typeof listener.stop;
  track(`Bun.listen on ${"port" in listener ? `port ${listener.port}` : "a unix socket"}`, () => !stopped, () => listener.stop(true));
  return listener;
}) as typeof Bun.listen;

for (const Server of [NetServer, HttpServer]) {
  const proto = Server.prototype as { listen(...args: unknown[]): unknown };
  const original = proto.listen;
  proto.listen = function (this: NetServer, ...args: unknown[]) {
    track(`${Server === HttpServer ? "http" : "net"} server`, () => this.listening, () => void this.close());
    return original.apply(this, args);
  };
}

// ---- child processes -------------------------------------------------------------

const spawn = Bun.spawn;
Bun.spawn = ((...args: Parameters<typeof Bun.spawn>) => {
  const proc = (spawn as (...a: unknown[]) => ReturnType<typeof Bun.spawn>).apply(Bun, args);
  if (forNode()) return proc;
  const cmd = Array.isArray(args[0]) ? args[0].join(" ") : String((args[0] as { cmd?: string[] }).cmd?.join(" ") ?? args[0]);
  track(`child process '${cmd.slice(0, 120)}'`, () => proc.exitCode === null && proc.signalCode === null, () => proc.kill("SIGKILL"));
  return proc;
}) as typeof Bun.spawn;

// Every node:child_process spawn goes through ChildProcess.prototype.spawn (not in node's typings).
const childProto = ChildProcess.prototype as unknown as { spawn(this: ChildProcess, options: { file?: string; args?: string[] }): unknown };
const childSpawn = childProto.spawn;
childProto.spawn = function (this: ChildProcess, options: { file?: string; args?: string[] }) {
  const result = childSpawn.call(this, options);
  const cmd = options.args?.join(" ") ?? options.file ?? "?";
  track(`child process '${cmd.slice(0, 120)}'`, () => this.exitCode === null && this.signalCode === null, () => this.kill("SIGKILL"));
  return result;
};

// ---- worker threads ------------------------------------------------------------------

const BaseWorker = globalThis.Worker;
class TrackedWorker extends BaseWorker {
  constructor(url: string | URL, options?: WorkerOptions) {
    super(url, options);
    const name = String(url);
    if (PROCESS_SINGLETONS.some((re) => re.test(name))) return;
    let ended = false;
    this.addEventListener("close", () => (ended = true));
    const terminate = this.terminate.bind(this);
    this.terminate = () => {
      ended = true;
      return terminate();
    };
    track(`worker thread ${name.replace(/^file:\/\//, "")}`, () => !ended, () => terminate());
  }
}
globalThis.Worker = TrackedWorker as typeof Worker;

// ---- intervals ---------------------------------------------------------------------

const interval = globalThis.setInterval;
globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
  const timer = interval(...args);
  track("setInterval", () => !(timer as unknown as { _destroyed: boolean })._destroyed, () => clearInterval(timer));
  return timer;
}) as typeof setInterval;

// ---- per file ----------------------------------------------------------------------

async function check(file: string): Promise<void> {
  const started = handles;
  handles = [];
  const deadline = performance.now() + SETTLE_MS;
  let open = started.filter((h) => h.open());
  while (open.length > 0 && performance.now() < deadline) {
    await Bun.sleep(25);
    open = open.filter((h) => h.open());
  }
  if (open.length === 0) return;
  for (const h of open) {
    try {
      h.close();
    } catch {}
  }
  const list = open.map((h) => `  - ${h.kind}, started at ${h.where}`).join("\n");
  throw new Error(`${file} left ${open.length} running after its tests (closed now):\n${list}`);
}

(globalThis as { __openHandlesCheck?: typeof check }).__openHandlesCheck = check;

plugin({
  name: "open-handles",
  setup(build) {
    build.onLoad({ filter: /\.test\.ts$/ }, async ({ path }) => {
      const file = path.slice(path.lastIndexOf("/test/") + 1);
      // Appended on the last line, so the file's line numbers stay as they are; afterAll hooks run in
      // the order they are registered, so this one runs after the file's own.
      const hook = `;import { afterAll as __openHandlesAfterAll } from "bun:test"; __openHandlesAfterAll(() => (globalThis as any).__openHandlesCheck(${JSON.stringify(file)}));`;
      return { loader: "ts", contents: `${await Bun.file(path).text()}\n${hook}\n` };
    });
  },
});
