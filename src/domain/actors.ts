import { z } from "zod";

export const AUDIT_ACTOR_TYPES = ["key", "cli"] as const;

/** Who made a change: an API key (or a person's session, by e-mail), or the admin CLI. */
export const AuditActor = z
  .object({
    type: z.enum(AUDIT_ACTOR_TYPES),
    id: z.string().optional().meta({ description: "The API key's id." }),
    name: z.string().optional().meta({ description: "The API key's name." }),
  })
  .meta({ id: "AuditActor" });
export type AuditActor = z.output<typeof AuditActor>;
