import { z } from "zod";
import { Name } from "../shared/shapes";

export const ROLES = ["admin", "member"] as const;

export const CreateKeyInput = z.object({
  workspaceId: z.string().min(1),
  role: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }).default("member"),
  name: Name.default("api key"),
});
export type CreateKeyInput = z.input<typeof CreateKeyInput>;

export interface ApiKeyView {
  id: string;
  workspaceId: string;
  name: string;
  role: (typeof ROLES)[number];
  start: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface CreatedKey extends ApiKeyView {
  /** The whole key, returned only here, once. */
  apiKey: string;
}
