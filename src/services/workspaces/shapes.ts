import { z } from "zod";
import { VERSIONS } from "../../domain/versions";
import { Name } from "../shared/shapes";

/** Per-workspace feature gates. */
export const FEATURES = ["aggregated-mappings"] as const;
export type Feature = (typeof FEATURES)[number];

export const CreateWorkspaceInput = z.object({
  name: Name,
  email: z.email({ error: "must be an e-mail address" }).max(320),
  /** Unset: the newest version. null: none, so requests without the header get the contract's fallback. */
  defaultVersion: z.enum(VERSIONS, { error: `must be one of ${VERSIONS.join(", ")}, or none` }).nullable().optional(),
});
export type CreateWorkspaceInput = z.input<typeof CreateWorkspaceInput>;

export const SetFeatureInput = z.object({
  workspaceId: z.string().min(1),
  feature: z.enum(FEATURES, { error: `must be one of ${FEATURES.join(", ")}` }),
  enabled: z.boolean(),
});

export const SetDefaultVersionInput = z.object({
  workspaceId: z.string().min(1),
  version: z.enum(VERSIONS, { error: `must be one of ${VERSIONS.join(", ")}` }).nullable(),
});

export interface WorkspaceView {
  id: string;
  name: string;
  email: string;
  defaultVersion: string | null;
  features: string[];
  createdAt: Date;
  updatedAt: Date;
}
