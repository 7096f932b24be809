import { describe, expect, test } from "bun:test";
import { FILE_FORMATS } from "../src/services/connections/shapes";
import { attachmentFormat, attachmentName, senderAllowed, subjectMatches } from "../src/services/run-path/doors/email";

/** The inbox rules as plain functions (docs/decisions/email.md). */
describe("allowed senders", () => {
  const list = ["ops@acme.example", "@partner.example", "*@globex.example"];

  test("no list, or an empty one, allows anyone (even no sender)", () => {
    for (const allowed of [null, undefined, []]) {
      expect(senderAllowed("x@y.example", allowed)).toBe(true);
      expect(senderAllowed(null, allowed)).toBe(true);
    }
  });

  test("exact addresses and whole domains, without case; not subdomains, not look-alikes", () => {
    expect(senderAllowed("OPS@Acme.Example", list)).toBe(true);
    expect(senderAllowed("dev@acme.example", list)).toBe(false);
    expect(senderAllowed("anyone@partner.example", list)).toBe(true);
    expect(senderAllowed("a@GLOBEX.example", list)).toBe(true);
    expect(senderAllowed("a@eu.partner.example", list)).toBe(false);
    expect(senderAllowed("a@evilpartner.example", list)).toBe(false);
    expect(senderAllowed("partner.example@evil.example", list)).toBe(false);
    expect(senderAllowed("ops@acme.example.evil", list)).toBe(false);
    expect(senderAllowed(null, list)).toBe(false);
    expect(senderAllowed("not-an-address", list)).toBe(false);
  });
});

describe("subject filter", () => {
  test("a case-insensitive substring; regular expression characters are plain text", () => {
    expect(subjectMatches("Re: Daily ITEMS for Monday", "daily items")).toBe(true);
    expect(subjectMatches("Invoice", "items")).toBe(false);
    expect(subjectMatches("", "items")).toBe(false);
    expect(subjectMatches("orders (EU) [42]", "(eu) [42]")).toBe(true);
    expect(subjectMatches("orders EU 42", ".*")).toBe(false);
    expect(subjectMatches("anything", null)).toBe(true);
    expect(subjectMatches("anything", "")).toBe(true);
  });
});

describe("attachment format", () => {
  test("by extension, any case; .jsonl and .tab are their formats; the content type only when there is no extension", () => {
    for (const f of FILE_FORMATS) expect(attachmentFormat(`x.${f.toUpperCase()}`, "application/octet-stream")).toEqual({ format: f, shown: f });
    expect(attachmentFormat("x.jsonl", null).format).toBe("ndjson");
    expect(attachmentFormat("x.tab", null).format).toBe("tsv");
    expect(attachmentFormat("x.pdf", "text/csv")).toEqual({ format: null, shown: "pdf" });
    expect(attachmentFormat("x.csv.gz", "text/csv")).toEqual({ format: null, shown: "gz" });
    expect(attachmentFormat(null, "text/csv; charset=utf-8")).toEqual({ format: "csv", shown: "text/csv" });
    expect(attachmentFormat("noext", "application/json")).toEqual({ format: "json", shown: "application/json" });
    expect(attachmentFormat(undefined, "image/png")).toEqual({ format: null, shown: "image/png" });
    expect(attachmentFormat(undefined, undefined)).toEqual({ format: null, shown: "unknown" });
    expect(attachmentFormat(".csv", null).format).toBeNull();
  });
});

describe("attachment names", () => {
  test("the last path part, without control characters or leading dots; a fallback when nothing is left; repeats told apart", () => {
    const taken = new Set<string>();
    expect(attachmentName("../../etc/items.csv", 1, "csv", taken)).toBe("items.csv");
    expect(attachmentName("C:\\exports\\ITEMS.csv", 2, "csv", taken)).toBe("ITEMS (2).csv");
    expect(attachmentName("items.csv", 3, "csv", taken)).toBe("items (3).csv");
    expect(attachmentName("a\u0000b\nc.csv", 4, "csv", taken)).toBe("abc.csv");
    expect(attachmentName("..", 5, "csv", taken)).toBe("attachment-5.csv");
    expect(attachmentName(null, 6, null, taken)).toBe("attachment-6");
    expect(attachmentName(".profile", 7, null, taken)).toBe("profile");
    const long = attachmentName(`${"x".repeat(400)}.ndjson`, 8, "ndjson", taken);
    expect(long.length).toBe(150);
    expect(long.endsWith(".ndjson")).toBe(true);
  });
});
