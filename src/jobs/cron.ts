import { CronExpressionParser } from "cron-parser";
import type { CronSpec } from "./port";

/**
 * Cron slots in UTC. Both queues accept five fields only (minute, hour, day
 * of month, month, day of week), the form graphile-worker's crontab accepts
 * too, so a schedule means the same on either database.
 */
export function checkCron(spec: CronSpec): void {
  if (!/^[a-zA-Z0-9_.:-]+$/.test(spec.name)) throw new Error(`cron "${spec.name}": the name may hold letters, digits, _ . : - only`);
  if (spec.cron.trim().split(/\s+/).length !== 5) throw new Error(`cron "${spec.name}": "${spec.cron}" must have five fields`);
  CronExpressionParser.parse(spec.cron, { tz: "UTC" });
}

/** The latest slot at or before `at`. */
export function latestSlot(cron: string, at: Date): Date {
  // prev() is strictly before currentDate; a minute slot equal to `at` counts.
  return CronExpressionParser.parse(cron, { tz: "UTC", currentDate: new Date(at.getTime() + 1) }).prev().toDate();
}

/** The first slot after `at`. */
export function nextSlot(cron: string, at: Date): Date {
  return CronExpressionParser.parse(cron, { tz: "UTC", currentDate: at }).next().toDate();
}
