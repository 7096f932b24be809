import { spawnSync } from "node:child_process";

/**
 * The shell examples of the README and the guide, taken apart so a test can
 * run them as a reader pastes them. The rules (docs/guide/README.md, "How the
 * examples are checked"):
 * - a block fenced `sh` is run; any other fence (`shell`, `text`, `ts`, ...) is
 *   only shown;
 * - a command is one or more lines that bash reads as complete (continuation
 *   lines, open quotes and here-documents included);
 * - a comment line right after a command that starts with `# {` or `# [` is
 *   the output it shows: each `"member": value` in it must be in the output,
 *   `...` inside a string standing for any text;
 * - a command must exit 0, and must not answer an error body
 *   (`"statusCode": 4xx/5xx`) unless the output it shows has `"error"`.
 */
export interface Example {
  file: string;
  heading: string;
  /** 1-based line of the command's first line in its file. */
  line: number;
  command: string;
  /** The output comment(s) shown after it, without the leading `# `. */
  expected: string[];
}

export interface Block {
  file: string;
  heading: string;
  line: number;
  lang: string;
  examples: Example[];
}

/** Fenced blocks of a markdown text with the `##`/`###` heading they sit under. */
export function blocks(file: string, markdown: string): Block[] {
  const lines = markdown.split("\n");
  const out: Block[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const h = /^#{1,3} (.*)$/.exec(lines[i]!);
    if (h) heading = h[1]!.trim();
    const fence = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    const body = lines.slice(start, end);
    out.push({ file, heading, line: start, lang: fence[1]!, examples: fence[1] === "sh" ? commands(file, heading, start + 1, body) : [] });
    i = end;
  }
  return out;
}

/** bash's own parser says whether a piece of text is a complete command list. */
function complete(text: string): boolean {
  if (/\\\s*$/.test(text)) return false;
  const r = spawnSync("bash", ["-n"], { input: text, encoding: "utf8" });
  return r.status === 0 && !/here-document/.test(r.stderr);
}

function commands(file: string, heading: string, firstLine: number, body: string[]): Example[] {
  const out: Example[] = [];
  let pending: string[] = [];
  let pendingLine = 0;
  for (let i = 0; i < body.length; i++) {
    const line = body[i]!;
    if (pending.length === 0) {
      if (/^\s*$/.test(line)) continue;
      if (/^\s*#/.test(line)) {
        const shown = /^# ([[{].*)$/.exec(line);
        const last = out[out.length - 1];
        if (shown && last) last.expected.push(shown[1]!);
        continue;
      }
      pendingLine = firstLine + i;
    }
    pending.push(line);
    const text = pending.join("\n");
    if (complete(text)) {
      out.push({ file, heading, line: pendingLine, command: text, expected: [] });
      pending = [];
    }
  }
  if (pending.length) throw new Error(`${file}:${pendingLine}: the example does not end (bash reads it as incomplete)`);
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Regular expressions for each `"member": value` shown in an output comment (an object or array value: its opening bracket). */
export function expectations(shown: string): { text: string; re: RegExp }[] {
  const pairs = shown.matchAll(/"([^"\\]+)":\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)/g);
  const scalars = [...pairs].map(([text, name, value]) => {
    let v: string;
    if (value!.startsWith('"')) {
      const inner = value!.slice(1, -1);
      v = `"${inner.split("...").map(escape).join('(?:[^"\\\\]|\\\\.)*')}"`;
    } else v = escape(value!);
    return { text: text!, re: new RegExp(`"${escape(name!)}"\\s*:\\s*${v}`) };
  });
  const nested = [...shown.matchAll(/"([^"\\]+)":\s*([[{])/g)].map(([text, name, open]) => ({
    text: text!,
    re: new RegExp(`"${escape(name!)}"\\s*:\\s*${escape(open!)}`),
  }));
  return [...scalars, ...nested];
}

/**
 * One bash script that runs every example in order, each between markers
 * that carry its index and exit code, so one shell keeps the variables the
 * examples set for the ones after them.
 */
export function script(examples: Example[], prelude: string): string {
  const parts = [prelude, "set -o pipefail"];
  examples.forEach((e, i) => {
    parts.push(`printf '\\n@@begin ${i}\\n'`, e.command, `printf '\\n@@end ${i} %s\\n' "$?"`);
  });
  return parts.join("\n") + "\n";
}

/** Output and exit code of each example, from the markers `script` writes. */
export function results(stdout: string): Map<number, { code: number; output: string }> {
  const out = new Map<number, { code: number; output: string }>();
  const re = /@@begin (\d+)\n([\s\S]*?)\n@@end \1 (\d+)\n/g;
  for (const m of stdout.matchAll(re)) out.set(Number(m[1]), { code: Number(m[3]), output: m[2]! });
  return out;
}
