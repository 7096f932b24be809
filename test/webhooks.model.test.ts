import { describe, expect, test } from "bun:test";
import { DEFAULT_RETRY_SCHEDULE, type WebhookSettings } from "../src/adapters/webhooks/port";
import { parseConfig } from "../src/config";
import { nextRetryDelayMs, parseRetryAfter } from "../src/services/webhooks/retry";
import { nonPublicRange } from "../src/services/webhooks/targets";

/** The rules behind delivery, as plain functions: the retry schedule, Retry-After, and which addresses are public. */

const NOW = new Date("2026-11-22T10:00:00Z");

describe("the default retry schedule", () => {
  test("is 5s, 5m, 30m, 2h, 5h, 10h, 10h: eight attempts over about 27 hours", () => {
    const s = parseConfig({}).webhooks.retryScheduleMs;
    expect(DEFAULT_RETRY_SCHEDULE).toBe("5s,5m,30m,2h,5h,10h,10h");
    expect(s).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    const hours = s.reduce((a, b) => a + b, 0) / 3_600_000;
    expect(hours).toBeGreaterThan(27);
    expect(hours).toBeLessThan(28);
  });

  test("other defaults: 15 s per attempt, Retry-After followed up to 10 h, private targets refused", () => {
    expect(parseConfig({}).webhooks).toMatchObject({ timeoutMs: 15_000, retryAfterMaxMs: 36_000_000, allowPrivateTargets: false });
  });
});

describe("the next delay", () => {
  const settings: WebhookSettings = { timeoutMs: 1000, retryScheduleMs: [5_000, 60_000, 3_600_000], retryAfterMaxMs: 600_000, allowPrivateTargets: false };

  test("follows the schedule after each failed automatic attempt, and ends when it is spent", () => {
    expect([1, 2, 3, 4].map((a) => nextRetryDelayMs(settings, a, null))).toEqual([5_000, 60_000, 3_600_000, null]);
  });

  test("a Retry-After replaces the scheduled delay, shorter or longer, up to the cap; it adds no attempts", () => {
    expect(nextRetryDelayMs(settings, 1, 120_000)).toBe(120_000);
    expect(nextRetryDelayMs(settings, 3, 1_000)).toBe(1_000);
    expect(nextRetryDelayMs(settings, 1, 86_400_000)).toBe(600_000);
    expect(nextRetryDelayMs(settings, 4, 1_000)).toBeNull();
  });
});

describe("Retry-After", () => {
  test.each([
    ["120", 120_000],
    ["0", 0],
    [" 7 ", 7_000],
    ["Sun, 22 Nov 2026 10:01:30 GMT", 90_000],
    ["Sunday, 22-Nov-26 10:00:10 GMT", 10_000],
    ["Sun Nov 22 10:00:05 2026", 5_000],
    ["Sun, 22 Nov 2026 09:00:00 GMT", 0],
    ["-5", null],
    ["1.5", null],
    ["soon", null],
    ["", null],
  ] as const)("%p is %p ms", (header, expected) => {
    expect(parseRetryAfter(header, NOW)).toBe(expected);
  });

  test("no header is no hint", () => {
    expect(parseRetryAfter(null, NOW)).toBeNull();
  });
});

describe("public and non-public addresses", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.20.30.40", "private"],
    ["172.31.255.255", "private"],
    ["192.168.0.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["fe80::abcd", "linkLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fdff::1", "uniqueLocal"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.251", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::ffff:127.0.0.1", "ipv4Mapped"],
    ["::ffff:8.8.8.8", "ipv4Mapped"],
    ["64:ff9b::a00:1", "rfc6052"],
    ["2002:a00:1::1", "6to4"],
    ["100.64.1.1", "carrierGradeNat"],
    ["192.0.2.10", "reserved"],
    ["not an address", "invalid"],
  ])("%s is refused (%s)", (address, range) => {
    expect(nonPublicRange(address)).toBe(range);
  });

  test.each(["8.8.8.8", "93.184.215.14", "172.32.0.1", "2606:4700::1111", "2001:4860:4860::8888"])("%s is public", (address) => {
    expect(nonPublicRange(address)).toBeNull();
  });
});
