import type { ArrivalRow } from "../run-path/ingest/inbound";
import type { Arrival } from "./shapes";

export function presentArrival(row: ArrivalRow): Arrival {
  const out: Arrival = {
    id: row.id,
    connectionId: row.connectionId,
    transport: row.transport as Arrival["transport"],
    outcome: row.outcome as Arrival["outcome"],
    runIds: row.runIds ?? [],
    metadata: row.metadata ?? {},
    createdAt: row.createdAt,
  };
  if (row.filename != null) out.filename = row.filename;
  if (row.path != null) out.path = row.path;
  if (row.size != null) out.size = Number(row.size);
  if (row.reason != null) out.reason = row.reason;
  return out;
}
