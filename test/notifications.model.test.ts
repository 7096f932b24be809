import { describe, expect, test } from "bun:test";
import { notificationEventOf, recipientProblem, render, type RunFacts } from "../src/services/notifications";
import { SMS_MAX } from "../src/services/notifications/templates";

/** Which run events notify, and what each channel's message says and escapes. */

const facts = (over: Partial<RunFacts> = {}): RunFacts => ({
  eventType: "PIPELINE_RUN_FAILED",
  runId: "run_01abc",
  status: "failed",
  pipelineId: "pipe_1",
  pipelineName: "Orders <import> & co",
  connectionId: "conn_1",
  connectionName: "Acme SFTP",
  filename: "orders.csv",
  size: 123_456,
  direction: "inbound",
  rows: { total: 40, valid: 15, invalid: 25, skipped: 0, quarantined: 0 },
  errors: Array.from({ length: 20 }, (_, i) => ({ inputRow: i * 2 + 1, field: "qty", message: `must be an integer (row ${i})` })),
  errorMessage: "25 invalid rows (onInvalidRow: fail)",
  at: "2026-11-22T10:00:00.000Z",
  url: "https://files.example.com/pipeline-runs/run_01abc",
  ...over,
});

describe("which run events notify", () => {
  test.each([
    ["pipeline_run.failed", "inbound", "PIPELINE_RUN_FAILED"],
    ["pipeline_run.failed", "outbound", "PIPELINE_RUN_FAILED"],
    ["pipeline_run.completed", "inbound", "PIPELINE_RUN_SUCCEEDED"],
    ["pipeline_run.completed", "outbound", "nothing"],
    ["pipeline_run.delivered", "outbound", "PIPELINE_RUN_SUCCEEDED"],
    ["pipeline_run.acknowledged", "inbound", "nothing"],
  ] as const)("%s of an %s run: %s", (type, direction, expected) => {
    expect(notificationEventOf({ type }, direction) ?? "nothing").toBe(expected);
  });
});

describe("messages", () => {
  test("e-mail: a subject, plain text with every fact and the first 5 row errors of all invalid ones, HTML with the same escaped", () => {
    const m = render("EMAIL", facts());
    expect(m.subject).toBe("[File Pipeline] Run failed: Orders <import> & co - orders.csv");
    expect(m.text).toContain("Pipeline:   Orders <import> & co (pipe_1, inbound)");
    expect(m.text).toContain("File:       orders.csv (120.6 KB)");
    expect(m.text).toContain("Rows:       40 read, 15 valid, 25 invalid");
    expect(m.text).toContain("First row errors (5 of 25):");
    expect(m.text).toContain("  - data row 9, qty: must be an integer (row 4)");
    expect(m.text).not.toContain("(row 5)");
    expect(m.text).toEndWith("View the run: https://files.example.com/pipeline-runs/run_01abc");
    expect(m.html).toContain("Orders &lt;import&gt; &amp; co");
    expect(m.html).not.toContain("<import>");
  });

  test("success: no error line; counts say what was skipped and quarantined; a delivered outbound run says delivered", () => {
    const ok = render(
      "EMAIL",
      facts({ eventType: "PIPELINE_RUN_SUCCEEDED", status: "completed", errorMessage: null, errors: [], rows: { total: 10, valid: 8, invalid: 2, skipped: 1, quarantined: 1 } }),
    );
    expect(ok.subject).toStartWith("[File Pipeline] Run succeeded: ");
    expect(ok.text).not.toContain("Error:");
    expect(ok.text).toContain("10 read, 8 valid, 2 invalid (1 skipped, 1 quarantined)");
    const delivered = render("SLACK", facts({ eventType: "PIPELINE_RUN_SUCCEEDED", status: "delivered", direction: "outbound", errorMessage: null, errors: [] }));
    expect(delivered.text).toStartWith("*Pipeline run delivered*:");
    const unread = render("SMS", facts({ rows: null, errors: [], errorMessage: "the file is not valid UTF-8" }));
    expect(unread.text).toContain("Rows: not counted (the file was not read). Error: the file is not valid UTF-8 https://");
  });

  test("Slack: &, < and > escaped in every value, the link in Slack's syntax", () => {
    const m = render("SLACK", facts({ connectionName: "<!channel> & friends" }));
    expect(m.text).toContain("&lt;!channel&gt; &amp; friends");
    expect(m.text).not.toContain("<!channel>");
    expect(m.text).toEndWith("<https://files.example.com/pipeline-runs/run_01abc|View the run>");
  });

  test("SMS: one paragraph, cut to fit, the link always whole at the end", () => {
    const m = render("SMS", facts({ errorMessage: "x".repeat(2000) }));
    expect(m.text.length).toBeLessThanOrEqual(SMS_MAX);
    expect(m.text).toEndWith("… https://files.example.com/pipeline-runs/run_01abc");
    expect(m.text).not.toContain("\n");
  });
});

describe("recipient formats", () => {
  test.each([
    ["EMAIL", "ops@acme.test", "accepted"],
    ["EMAIL", "ops@", "refused"],
    ["SLACK", "C0123ABCD", "accepted"],
    ["SLACK", "#ops-alerts", "accepted"],
    ["SLACK", "#données", "accepted"],
    ["SLACK", "ops", "refused"],
    ["SMS", "+15551234567", "accepted"],
    ["SMS", "+1555", "refused"],
  ] as const)("%s %s: %s", (channel, r, ok) => {
    expect(recipientProblem(channel, r) === null ? "accepted" : "refused").toBe(ok);
  });
});
