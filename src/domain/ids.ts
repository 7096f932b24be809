import { typeid } from "typeid-js";

/** Type-prefixed, time-sortable identifiers (TypeID: prefix + UUIDv7 in base32). */
export const ID_PREFIXES = {
  workspace: "ws",
  apiKey: "key",
  connection: "conn",
  sftpServer: "srv",
  schema: "sch",
  pipeline: "pipe",
  webhook: "wh",
  run: "run",
  job: "job",
  upload: "upl",
  event: "evt",
  auditEvent: "aud",
  arrival: "arr",
  sftpPickup: "spk",
  delivery: "dlv",
  notificationPreference: "npref",
  notificationSend: "nsend",
  user: "user",
  membership: "mbr",
  session: "sess",
  userToken: "utok",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export function newId(kind: IdKind): string {
  return typeid(ID_PREFIXES[kind]).toString();
}
