import { and, eq, inArray } from "drizzle-orm";
import type { ConnectionRow } from "../../../connections/record";
import type { ServiceContext } from "../../../context";

/** An EMAIL connection as the inbox rules see it. */
export type Inbox = Pick<
  ConnectionRow,
  "id" | "workspaceId" | "name" | "emailInboundAddress" | "emailAllowedFormats" | "emailAllowedSenders" | "emailSubjectFilter"
>;

/** Addresses compare without case (the service hands out lower-case ones). */
export function normalizeAddress(address: string): string {
  return address.trim().toLowerCase();
}

/** The EMAIL connections whose inbound addresses are among `addresses`, one each (a connection named twice counts once). */
export async function findInboxes(ctx: ServiceContext, addresses: readonly string[]): Promise<Inbox[]> {
  const wanted = [...new Set(addresses.map(normalizeAddress))].filter(Boolean);
  if (wanted.length === 0) return [];
  const c = ctx.db.t.connections;
  return ctx.db.read
    .select({
      id: c.id,
      workspaceId: c.workspaceId,
      name: c.name,
      emailInboundAddress: c.emailInboundAddress,
      emailAllowedFormats: c.emailAllowedFormats,
      emailAllowedSenders: c.emailAllowedSenders,
      emailSubjectFilter: c.emailSubjectFilter,
    })
    .from(c)
    .where(and(eq(c.type, "EMAIL"), inArray(c.emailInboundAddress, wanted)))
    .orderBy(c.emailInboundAddress);
}

/** Whether mail to `address` is accepted: an existing EMAIL connection's inbound address. */
export async function isInboxAddress(ctx: ServiceContext, address: string): Promise<boolean> {
  return (await findInboxes(ctx, [address])).length > 0;
}
