import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../trpc/router";

type Out = inferRouterOutputs<AppRouter>;
export type Session = Out["account"]["me"];
export type Run = Out["runs"]["get"];
export type Pipeline = Out["pipelines"]["get"];

/** Dates arrive as ISO text (no transformer): shown in the reader's locale. */
export function when(value: unknown): string {
  if (!value) return "";
  const d = new Date(value as string);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleString();
}
export type Connection = Out["connections"]["get"];
export type Webhook = Out["webhooks"]["get"];
