import { randomInt } from "node:crypto";

const ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";

/** `Acme Corp. (EU)` -> `acme-corp-eu`, at most `max` characters; `fallback` when nothing is left. */
export function slugify(text: string, max = 40, fallback = "x"): string {
  const s = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, max)
    .replace(/-+$/, "");
  return s || fallback;
}

export function randomSuffix(len = 6): string {
  let s = "";
  for (let i = 0; i < len; i++) s += ALNUM[randomInt(ALNUM.length)];
  return s;
}
