import { z } from "zod";

export const AUDIT_ACTOR_TYPES = ["key", "person", "cli"] as const;

/** Who made a change: an API key, a person, or the admin CLI. */
export const AuditActor = z
  .object({
    type: z.enum(AUDIT_ACTOR_TYPES).meta({ description: "`key`: an API key; `person`: a person on the dashboard (their session, or signing up, logging in, following a link); `cli`: the admin CLI." }),
    id: z.string().optional().meta({ description: "The API key's id, or the person's id (`user_...`)." }),
    name: z.string().optional().meta({ description: "The API key's name, or the person's e-mail address." }),
  })
  .meta({ id: "AuditActor" });
export type AuditActor = z.output<typeof AuditActor>;
