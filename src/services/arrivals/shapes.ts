import { z } from "zod";
import { ARRIVAL_OUTCOMES, ARRIVAL_TRANSPORTS } from "../run-path/ingest/inbound";
import { PageQuery } from "../shared/shapes";

export const ArrivalOutcomeShape = z
  .enum(ARRIVAL_OUTCOMES, { error: `must be one of ${ARRIVAL_OUTCOMES.join(", ")}` })
  .meta({ id: "ArrivalOutcome", description: "started: runs began; rejected: a rule or every pipeline refused it; ignored: nothing to do (no pipeline, no attachment)." });

export const ArrivalTransportShape = z.enum(ARRIVAL_TRANSPORTS).meta({ id: "ArrivalTransport" });

/** `GET /connections/{id}/arrivals`: newest first. */
export const ListArrivalsQuery = PageQuery.extend({
  outcome: ArrivalOutcomeShape.optional(),
});
export type ListArrivalsQuery = z.input<typeof ListArrivalsQuery>;

export const Arrival = z
  .object({
    id: z.string(),
    connectionId: z.string(),
    transport: ArrivalTransportShape,
    filename: z.string().optional().meta({ description: "The file's name; absent when the whole message was refused (e-mail)." }),
    path: z.string().optional().meta({ description: "Where the file was found or kept (a path in the connection's space, or on the customer's server)." }),
    size: z.number().int().optional().meta({ description: "Bytes received." }),
    outcome: ArrivalOutcomeShape,
    reason: z.string().optional().meta({ description: "Why nothing (or not everything) started." }),
    runIds: z.array(z.string()),
    metadata: z
      .record(z.string(), z.unknown())
      .meta({ description: "Facts about the arrival, never secrets (e-mail: sender, subject, messageId, recipient)." }),
    createdAt: z.date(),
  })
  .meta({ id: "Arrival", description: "A file (or an e-mail) a transport received, and what became of it." });
export type Arrival = z.output<typeof Arrival>;
