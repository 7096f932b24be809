import { randomBytes } from "node:crypto";
import { RESERVED_NAME } from "../../domain/reserved";

/**
 * The temporary names this service writes under on a customer's server
 * before renaming to the final name: `.fps.<name>.<key>.<random>.part`.
 * The `.fps` start marks them as ours (src/domain/reserved.ts), and the
 * leading dot and `.part` end make pollers and people skip them. `key` (8
 * hex) names the delivery: every attempt of one delivery shares it, so a
 * later attempt can find what an interrupted one left; `random` (8 hex)
 * keeps two attempts from ever writing the same file.
 */
const PATTERN = new RegExp(`^${RESERVED_NAME.replace(/\./g, "\\.")}\\.(.+)\\.([0-9a-f]{8})\\.([0-9a-f]{8})\\.part$`);

export function temporaryName(name: string, key: string = randomHex()): string {
  if (!/^[0-9a-f]{8}$/.test(key)) throw new Error(`a temporary name's key is 8 lowercase hex digits, not '${key}'`);
  return `${RESERVED_NAME}.${name}.${key}.${randomHex()}.part`;
}

/** The final name and delivery key of one of our temporary names; null for any other name. */
export function parseTemporaryName(file: string): { name: string; key: string } | null {
  const m = PATTERN.exec(file);
  return m ? { name: m[1]!, key: m[2]! } : null;
}

const randomHex = () => randomBytes(4).toString("hex");
