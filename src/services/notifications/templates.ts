import type { NotifyChannel, NotifyMessage } from "../../adapters/notify/port";
import type { RowError, RunCounts } from "../../domain/runs";
import type { NotificationEventType } from "./shapes";

/**
 * Every notification's words, in one place. A message says which run,
 * pipeline, connection and file, the outcome, the row counts and the first
 * errors, and links to the run. Plain text for every channel; e-mail also
 * gets a simple HTML part; Slack gets its own escaping and link syntax; SMS
 * is the short form.
 */
export interface RunFacts {
  eventType: NotificationEventType;
  runId: string;
  /** The run's status when the event happened (completed, delivered, failed). */
  status: string;
  pipelineId: string;
  pipelineName: string;
  connectionId: string;
  connectionName: string;
  filename: string;
  size: number;
  direction: string;
  rows: RunCounts | null;
  errors: RowError[];
  errorMessage: string | null;
  /** When the event happened (ISO 8601). */
  at: string;
  /** Link to the run. */
  url: string;
}

/** Row errors listed in a message. */
export const FIRST_ERRORS = 5;

const outcomeWord = (f: RunFacts) => (f.eventType === "PIPELINE_RUN_FAILED" ? "failed" : f.status === "delivered" ? "delivered" : "succeeded");

export function subject(f: RunFacts): string {
  return `[File Pipeline] Run ${outcomeWord(f)}: ${f.pipelineName} - ${f.filename}`;
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export function countsLine(rows: RunCounts | null): string {
  if (!rows) return "not counted (the file was not read)";
  let s = `${rows.total} read, ${rows.valid} valid, ${rows.invalid} invalid`;
  if (rows.skipped || rows.quarantined) s += ` (${rows.skipped} skipped, ${rows.quarantined} quarantined)`;
  return s;
}

export const errorLine = (e: RowError) => `data row ${e.inputRow}, ${e.field}: ${e.message}`;

/** Label and value pairs, the body of every long form. */
function facts(f: RunFacts): [string, string][] {
  const out: [string, string][] = [
    ["Run", f.runId],
    ["Outcome", `${outcomeWord(f)} (status ${f.status})`],
    ["Pipeline", `${f.pipelineName} (${f.pipelineId}, ${f.direction})`],
    ["Connection", `${f.connectionName} (${f.connectionId})`],
    ["File", `${f.filename} (${size(f.size)})`],
    ["Rows", countsLine(f.rows)],
  ];
  if (f.errorMessage) out.push(["Error", f.errorMessage]);
  out.push(["At", f.at]);
  return out;
}

function text(f: RunFacts): string {
  const lines = [`Pipeline run ${outcomeWord(f)}.`, ""];
  const rows = facts(f);
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  for (const [k, v] of rows) lines.push(`${`${k}:`.padEnd(width)} ${v}`);
  const first = f.errors.slice(0, FIRST_ERRORS);
  if (first.length > 0) {
    lines.push("", `First row errors (${first.length} of ${Math.max(f.rows?.invalid ?? 0, f.errors.length)}):`);
    for (const e of first) lines.push(`  - ${errorLine(e)}`);
  }
  lines.push("", `View the run: ${f.url}`);
  return lines.join("\n");
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

function html(f: RunFacts): string {
  const rows = facts(f)
    .map(([k, v]) => `<tr><th align="left" style="padding:2px 12px 2px 0">${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`)
    .join("");
  const first = f.errors.slice(0, FIRST_ERRORS);
  const errors =
    first.length > 0 ? `<p>First row errors:</p><ul>${first.map((e) => `<li>${escapeHtml(errorLine(e))}</li>`).join("")}</ul>` : "";
  return `<!doctype html><html><body style="font-family:sans-serif"><p><strong>Pipeline run ${escapeHtml(outcomeWord(f))}.</strong></p><table>${rows}</table>${errors}<p><a href="${escapeHtml(f.url)}">View the run</a></p></body></html>`;
}

/** Slack's text escaping: only &, < and > are special. */
const escapeSlack = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function slack(f: RunFacts): string {
  const lines = [`*Pipeline run ${outcomeWord(f)}*: ${escapeSlack(f.pipelineName)} - ${escapeSlack(f.filename)}`];
  for (const [k, v] of facts(f)) lines.push(`*${k}:* ${escapeSlack(v)}`);
  const first = f.errors.slice(0, FIRST_ERRORS);
  if (first.length > 0) {
    lines.push("*First row errors:*");
    for (const e of first) lines.push(`• ${escapeSlack(errorLine(e))}`);
  }
  lines.push(`<${f.url}|View the run>`);
  return lines.join("\n");
}

/** SMS: one short paragraph, at most SMS_MAX characters. */
export const SMS_MAX = 480;
function sms(f: RunFacts): string {
  const head = `File Pipeline: run ${f.runId} ${outcomeWord(f)}. Pipeline ${f.pipelineName}, connection ${f.connectionName}, file ${f.filename}. Rows: ${countsLine(f.rows)}.`;
  // The first row error is short and concrete; the run's error message comes last, where a cut costs least.
  let body = head;
  if (f.errors[0]) body += ` First row error: ${errorLine(f.errors[0])}.`;
  if (f.errorMessage) body += ` Error: ${f.errorMessage}`;
  const tail = ` ${f.url}`;
  if (body.length + tail.length > SMS_MAX) body = `${body.slice(0, SMS_MAX - tail.length - 1)}…`;
  return body + tail;
}

/** The message one channel sends for the run. */
export function render(channel: NotifyChannel, f: RunFacts): NotifyMessage {
  const s = subject(f);
  switch (channel) {
    case "EMAIL":
      return { subject: s, text: text(f), html: html(f) };
    case "SLACK":
      return { subject: s, text: slack(f) };
    case "SMS":
      return { subject: s, text: sms(f) };
  }
}
