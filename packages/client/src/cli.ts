#!/usr/bin/env node
// `fps`: the File Pipeline Service from a terminal, on the typed client.
import { createWriteStream, readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { loadConfig, saveConfig } from "./config.js";
import { createFpsClient, FpsError, type FpsClient, fileBlob, type PipelineRun, uploadRunFile } from "./node.js";
import { parseCsv } from "./csv.js";

type Flags = Record<string, string | boolean | string[] | undefined>;
interface Command {
  usage: string;
  summary: string;
  options?: ParseArgsConfig["options"];
  run(ctx: { args: string[]; flags: Flags; out: Output }): Promise<number | void>;
}

class UsageError extends Error {}

/** Human lines on stdout, or one JSON document with --json; progress and notes on stderr. */
class Output {
  constructor(readonly json: boolean) {}
  result(value: unknown, human: () => string) {
    process.stdout.write(this.json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
  }
  note(text: string) {
    if (!this.json) process.stderr.write(`${text}\n`);
  }
}

const common = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

function client(): FpsClient {
  const cfg = loadConfig();
  if (!cfg.apiKey) throw new UsageError("no API key: run `fps login --url URL --key KEY` or set FPS_API_KEY");
  return createFpsClient({ baseUrl: cfg.url || "http://localhost:3000", apiKey: cfg.apiKey });
}

const need = (args: string[], n: number, usage: string) => {
  if (args.length < n) throw new UsageError(`missing argument: usage: fps ${usage}`);
};

function bar(sent: number, total: number | undefined): string {
  if (!total) return `${(sent / 1048576).toFixed(1)} MiB`;
  const pct = Math.min(100, (sent / total) * 100);
  const width = 30;
  const full = Math.round((pct / 100) * width);
  return `[${"#".repeat(full)}${"-".repeat(width - full)}] ${pct.toFixed(0).padStart(3)}% ${(sent / 1048576).toFixed(1)}/${(total / 1048576).toFixed(1)} MiB`;
}

function progress(out: Output) {
  let last = 0;
  return (sent: number, total: number | undefined) => {
    if (out.json) return;
    const now = Date.now();
    if (now - last < 200 && sent !== total) return;
    last = now;
    process.stderr.write(process.stderr.isTTY ? `\r${bar(sent, total)}` : `${bar(sent, total)}\n`);
    if (sent === total && process.stderr.isTTY) process.stderr.write("\n");
  };
}

type Rows = { total?: number; valid?: number; invalid?: number; skipped?: number; quarantined?: number };
function runLine(run: PipelineRun): string {
  const rows = ((run.metadata ?? {}) as { rows?: Rows }).rows;
  const counts = rows ? ` rows: ${rows.total ?? 0} total, ${rows.valid ?? 0} valid, ${rows.skipped ?? 0} skipped, ${rows.quarantined ?? 0} quarantined` : "";
  return `${run.id}  ${run.status.padEnd(12)} ${run.pipelineName}  ${run.filename}${counts}${run.errorMessage ? `\n  error: ${run.errorMessage}` : ""}`;
}

function firstErrors(run: PipelineRun, n = 5): string[] {
  const errors = ((run.metadata ?? {}) as { errors?: { inputRow?: number; field?: string; message?: string }[] }).errors ?? [];
  return errors.slice(0, n).map((e) => `  row ${e.inputRow ?? "?"}${e.field ? ` ${e.field}` : ""}: ${e.message ?? ""}`);
}

async function follow(fps: FpsClient, run: PipelineRun, out: Output): Promise<number> {
  let last = run;
  for await (const r of fps.followRun(run.id)) {
    if (r.status !== last.status) out.note(`${r.id}: ${r.status}`);
    last = r;
  }
  out.result(last, () => [runLine(last), ...firstErrors(last)].join("\n"));
  return last.status === "completed" || last.status === "delivered" ? 0 : 1;
}

async function save(res: Response, file: string | undefined, out: Output, what: string) {
  if (!file || file === "-") {
    await pipeline(Readable.fromWeb(res.body as never), process.stdout);
    return;
  }
  await pipeline(Readable.fromWeb(res.body as never), createWriteStream(file));
  out.result({ saved: file, what }, () => `${what} saved to ${file}`);
}

const COMMANDS: Record<string, Command> = {
  login: {
    usage: "login --url URL --key KEY",
    summary: "check a key against the service and store it (owner-only config file)",
    options: { url: { type: "string" }, key: { type: "string" } },
    async run({ flags, out }) {
      const cfg = loadConfig();
      const url = (flags.url as string | undefined) ?? cfg.url ?? "http://localhost:3000";
      const apiKey = (flags.key as string | undefined) ?? cfg.apiKey;
      if (!apiKey) throw new UsageError("missing --key (or FPS_API_KEY)");
      const fps = createFpsClient({ baseUrl: url, apiKey, retry: { retries: 0 } });
      await fps.api.GET("/pipelines", { params: { query: { limit: 1 } } });
      const path = saveConfig({ url, apiKey });
      out.result({ url, config: path }, () => `logged in to ${url}; key stored in ${path}`);
    },
  },
  upload: {
    usage: "upload <pipelineId> <file> [--no-follow]",
    summary: "upload a file into a pipeline with a progress bar, then follow its run live to its end",
    options: { "no-follow": { type: "boolean" } },
    async run({ args, flags, out }) {
      need(args, 2, this.usage);
      const fps = client();
      const run = await uploadRunFile(fps, args[0]!, args[1]!, { onProgress: progress(out) });
      out.note(`${run.id}: ${run.status}`);
      if (flags["no-follow"]) return out.result(run, () => runLine(run));
      return follow(fps, run, out);
    },
  },
  "runs list": {
    usage: "runs list [--pipeline ID] [--status S] [--limit N]",
    summary: "the newest runs",
    options: { pipeline: { type: "string" }, status: { type: "string" }, limit: { type: "string" } },
    async run({ flags, out }) {
      const fps = client();
      const limit = Number(flags.limit ?? 20);
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError("--limit must be a positive whole number");
      const runs: PipelineRun[] = [];
      for await (const r of fps.paginate("/pipeline-runs", { query: { pipelineId: flags.pipeline as string | undefined, status: flags.status as never, limit: Math.min(limit, 100) } })) {
        runs.push(r);
        if (runs.length >= limit) break;
      }
      out.result(runs, () => (runs.length ? runs.map(runLine).join("\n") : "no runs"));
    },
  },
  "runs get": {
    usage: "runs get <runId>",
    summary: "one run, with its counts and first errors",
    async run({ args, out }) {
      need(args, 1, this.usage);
      const { data } = await client().api.GET("/pipeline-runs/{id}", { params: { path: { id: args[0]! } } });
      out.result(data, () => [runLine(data!), ...firstErrors(data!)].join("\n"));
    },
  },
  "runs tail": {
    usage: "runs tail <runId>",
    summary: "follow a run live until it ends (exit code 0 when it succeeded)",
    async run({ args, out }) {
      need(args, 1, this.usage);
      const fps = client();
      const { data } = await fps.api.GET("/pipeline-runs/{id}", { params: { path: { id: args[0]! } } });
      return follow(fps, data!, out);
    },
  },
  "runs ack": {
    usage: "runs ack <runId>",
    summary: "acknowledge a run",
    async run({ args, out }) {
      need(args, 1, this.usage);
      const { data } = await client().api.PATCH("/pipeline-runs/{id}/status", { params: { path: { id: args[0]! } }, body: { status: "acknowledged" } });
      out.result(data, () => runLine(data!));
    },
  },
  "runs retry": {
    usage: "runs retry <runId>",
    summary: "retry a failed run",
    async run({ args, out }) {
      need(args, 1, this.usage);
      const { data } = await client().api.POST("/pipeline-runs/{id}/retry", { params: { path: { id: args[0]! } } });
      out.result(data, () => runLine(data as PipelineRun));
    },
  },
  get: {
    usage: "get processed|original|rejects <runId> [-o file]",
    summary: "download a run's processed rows, the file received, or the rows skipped or quarantined (stdout unless -o)",
    options: { output: { type: "string", short: "o" } },
    async run({ args, flags, out }) {
      need(args, 2, this.usage);
      const kind = args[0]!;
      if (kind !== "processed" && kind !== "original" && kind !== "rejects") throw new UsageError(`unknown file '${kind}': use processed, original or rejects`);
      const res = await client().download(kind, args[1]!);
      await save(res, flags.output as string | undefined, out, `${kind} file of ${args[1]}`);
    },
  },
  search: {
    usage: "search <runId>... [--term T] [--field F] [--exact] [--case-sensitive] [--limit N]",
    summary: "search rows of processed files",
    options: { term: { type: "string" }, field: { type: "string" }, exact: { type: "boolean" }, "case-sensitive": { type: "boolean" }, limit: { type: "string" } },
    async run({ args, flags, out }) {
      need(args, 1, this.usage);
      const limit = Number(flags.limit ?? 100);
      const hits: { pipelineRunId: string; rowIndex: number; rowData: unknown }[] = [];
      for await (const hit of client().searchAll({
        pipelineRunIds: args,
        searchTerm: flags.term as string | undefined,
        fieldName: flags.field as string | undefined,
        exactMatch: Boolean(flags.exact),
        caseSensitive: Boolean(flags["case-sensitive"]),
        offset: 0,
        limit: Math.min(limit, 1000),
      })) {
        hits.push(hit);
        if (hits.length >= limit) break;
      }
      out.result(hits, () => (hits.length ? hits.map((h) => `${h.pipelineRunId} row ${h.rowIndex}: ${JSON.stringify(h.rowData)}`).join("\n") : "no rows match"));
    },
  },
  delta: {
    usage: "delta <baseRunId> <compareRunId>",
    summary: "rows added and removed between two runs of a pipeline",
    async run({ args, out }) {
      need(args, 2, this.usage);
      const { data } = await client().api.GET("/pipeline-runs/delta", { params: { query: { baseRunId: args[0]!, compareRunId: args[1]! } } });
      out.result(data, () => JSON.stringify(data, null, 2));
    },
  },
  "outbound send": {
    usage: "outbound send <pipelineId> <file.json|file.csv> [--format csv|json|xml] [--output-filename NAME]",
    summary: "send rows from a JSON array or CSV file through an outbound pipeline, then follow the delivery",
    options: { format: { type: "string" }, "output-filename": { type: "string" } },
    async run({ args, flags, out }) {
      need(args, 2, this.usage);
      const format = flags.format as string | undefined;
      if (format && !["csv", "json", "xml"].includes(format)) throw new UsageError(`--format must be csv, json or xml, not '${format}'`);
      const fps = client();
      const { data: pipe } = await fps.api.GET("/pipelines/{id}", { params: { path: { id: args[0]! } } });
      if (pipe!.direction !== "outbound") throw new UsageError(`pipeline ${args[0]} is ${pipe!.direction}: outbound send needs an outbound pipeline`);
      const { data: conn } = await fps.api.GET("/connections/{id}", { params: { path: { id: pipe!.clientId } } });
      const text = readFileSync(args[1]!, "utf8");
      const rows = args[1]!.toLowerCase().endsWith(".csv") ? parseCsv(text) : (JSON.parse(text) as unknown);
      if (!Array.isArray(rows)) throw new UsageError(`${args[1]} must hold a JSON array of row objects`);
      const done = await fps.sendOutbound(rows as Record<string, unknown>[], {
        connectionName: conn!.name,
        pipelineName: pipe!.name,
        outputFormat: format as "csv" | "json" | "xml" | undefined,
        outputFilename: flags["output-filename"] as string | undefined,
      });
      out.note(done.message);
      const { data: run } = await fps.api.GET("/pipeline-runs/{id}", { params: { path: { id: done.runId } } });
      return follow(fps, run!, out);
    },
  },
  "docs ls": {
    usage: "docs ls <connectionId> [path]",
    summary: "list a folder of a connection's space",
    async run({ args, out }) {
      need(args, 1, this.usage);
      const entries: { kind: string; path: string; size?: number }[] = [];
      for await (const e of client().paginate("/documents", { query: { connectionId: args[0]!, path: args[1] ?? "" } })) entries.push(e);
      out.result(entries, () => (entries.length ? entries.map((e) => `${e.kind === "folder" ? "d" : "-"} ${String(e.size ?? "").padStart(12)}  ${e.path}`).join("\n") : "empty"));
    },
  },
  "docs put": {
    usage: "docs put <connectionId> <file> [folder] [--force]",
    summary: "upload a file into a connection's space (presigned; multipart when large)",
    options: { force: { type: "boolean" } },
    async run({ args, flags, out }) {
      need(args, 2, this.usage);
      const file = await fileBlob(args[1]!);
      const obj = await client().uploadDocument(file, { connectionId: args[0]!, path: args[2] ?? "", force: Boolean(flags.force), onProgress: progress(out) });
      out.result(obj, () => `stored ${obj.path} (${obj.size} bytes)`);
    },
  },
  "docs get": {
    usage: "docs get <connectionId> <path> [-o file]",
    summary: "download an object of a connection's space",
    options: { output: { type: "string", short: "o" } },
    async run({ args, flags, out }) {
      need(args, 2, this.usage);
      const fps = client();
      const { data } = await fps.api.GET("/documents/download-url", { params: { query: { connectionId: args[0]!, path: args[1]! } } });
      const res = await fetch((data as { url: string }).url);
      if (!res.ok) throw new Error(`download failed: ${res.status}`);
      await save(res, (flags.output as string | undefined) ?? args[1]!.split("/").pop(), out, args[1]!);
    },
  },
  "docs rm": {
    usage: "docs rm <connectionId> <path> [--force]",
    summary: "delete an object of a connection's space",
    options: { force: { type: "boolean" } },
    async run({ args, flags, out }) {
      need(args, 2, this.usage);
      await client().api.DELETE("/documents/object", { params: { query: { connectionId: args[0]!, path: args[1]!, force: Boolean(flags.force) } } });
      out.result({ deleted: args[1] }, () => `deleted ${args[1]}`);
    },
  },
};

function help(): string {
  return [
    "fps: the File Pipeline Service from a terminal",
    "",
    "usage: fps <command> [arguments] [--json] [--help]",
    "",
    ...Object.values(COMMANDS).map((c) => `  fps ${c.usage}\n      ${c.summary}`),
    "",
    "The key and URL come from FPS_API_KEY and FPS_URL, else from `fps login`.",
    "--json prints machine-readable output; errors are one line on stderr with a non-zero exit.",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  const out = new Output(json);
  const name = COMMANDS[`${argv[0]} ${argv[1]}`] ? `${argv[0]} ${argv[1]}` : argv[0];
  const cmd = name ? COMMANDS[name] : undefined;
  if (!cmd) {
    if (!name || name === "--help" || name === "-h" || name === "help") {
      process.stdout.write(`${help()}\n`);
      return name ? 0 : 2;
    }
    process.stderr.write(`fps: unknown command '${argv.slice(0, 2).join(" ")}'; see fps --help\n`);
    return 2;
  }
  const rest = argv.slice(name!.split(" ").length);
  try {
    const { values, positionals } = parseArgs({ args: rest, options: { ...common, ...cmd.options }, allowPositionals: true, strict: true });
    if (values.help) {
      process.stdout.write(`usage: fps ${cmd.usage}\n\n${cmd.summary}\n`);
      return 0;
    }
    return (await cmd.run({ args: positionals, flags: values as Flags, out })) ?? 0;
  } catch (e) {
    const message =
      e instanceof FpsError
        ? `${e.message} (${e.statusCode} ${e.error}${e.requestId ? `, request ${e.requestId}` : ""})`
        : e instanceof Error
          ? e.message
          : String(e);
    if (json) process.stderr.write(`${JSON.stringify({ error: e instanceof FpsError ? e.error : "error", message, statusCode: e instanceof FpsError ? e.statusCode : undefined, requestId: e instanceof FpsError ? e.requestId : undefined })}\n`);
    else process.stderr.write(`fps: ${message.split("\n")[0]}\n`);
    return e instanceof UsageError || (e instanceof TypeError && (e as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") ? 2 : 1;
  }
}

// Run directly (`node dist/cli.js`); the installed command is bin/fps.js, which calls main itself.
if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
