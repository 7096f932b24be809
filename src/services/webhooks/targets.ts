import ipaddr from "ipaddr.js";
import type { ResolvedAddress } from "../../adapters/webhooks/port";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../context";

/**
 * Where a webhook may point (SSRF). Only public unicast addresses are
 * allowed: ipaddr.js names every other range (loopback, private,
 * linkLocal, uniqueLocal, unspecified, multicast, broadcast,
 * carrierGradeNat, reserved, ipv4Mapped, 6to4, teredo, rfc6052, ...), and
 * each of those is refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS is set.
 * IPv6 forms that embed an IPv4 address (mapped, 6to4, NAT64) are refused
 * whole rather than unwrapped.
 */
const ALLOW_HINT = "loopback, private, link-local and other non-public targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true";

/** null for a public unicast address; otherwise the name of its range. */
export function nonPublicRange(address: string): string | null {
  if (!ipaddr.isValid(address)) return "invalid";
  const range = ipaddr.parse(address).range();
  return range === "unicast" ? null : range;
}

/** The host of a URL without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

const isLocalhostName = (host: string) => host === "localhost" || host.endsWith(".localhost") || host === "localhost.";

/**
 * Create and update: an address literal or `localhost` that is not public
 * is refused with a 400 naming the member; a name is resolved, and refused
 * if any address it resolves to is not public. A name that does not resolve
 * now is accepted: it is checked again at every send.
 */
export async function checkTargetOnSave(ctx: ServiceContext, rawUrl: string, member: string): Promise<void> {
  if (ctx.webhooks.settings.allowPrivateTargets) return;
  const url = new URL(rawUrl);
  const host = hostOf(url).toLowerCase();
  if (ipaddr.isValid(host)) {
    const range = nonPublicRange(host);
    if (range) throw new AppError("invalid_input", `${member}: ${host} is a ${range} address; ${ALLOW_HINT}`);
    return;
  }
  if (isLocalhostName(host)) throw new AppError("invalid_input", `${member}: ${host} is a loopback name; ${ALLOW_HINT}`);
  let addresses: ResolvedAddress[];
  try {
    addresses = await ctx.webhooks.resolve(host);
  } catch {
    return;
  }
  const bad = addresses.find((a) => nonPublicRange(a.address));
  if (bad) throw new AppError("invalid_input", `${member}: ${host} resolves to ${bad.address}, a ${nonPublicRange(bad.address)} address; ${ALLOW_HINT}`);
}

export type SendTarget = { ok: true; address: ResolvedAddress } | { ok: false; error: string; refused: boolean };

/**
 * At send time: resolve the host, refuse the call if any address is not
 * public (unless allowed), and hand back the one address to connect to.
 * `refused` failures are final (no retry); a name that does not resolve is
 * an ordinary failure and is retried.
 */
export async function resolveSendTarget(ctx: ServiceContext, url: URL): Promise<SendTarget> {
  const allow = ctx.webhooks.settings.allowPrivateTargets;
  const host = hostOf(url);
  let addresses: ResolvedAddress[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: ipaddr.parse(host).kind() === "ipv6" ? 6 : 4 }];
  } else {
    try {
      addresses = await ctx.webhooks.resolve(host);
    } catch (e) {
      return { ok: false, error: `could not resolve ${host}: ${(e as Error).message}`, refused: false };
    }
    if (addresses.length === 0) return { ok: false, error: `could not resolve ${host}: no address`, refused: false };
  }
  if (!allow) {
    const bad = addresses.find((a) => nonPublicRange(a.address));
    if (bad) {
      const via = bad.address === host ? "" : ` (${host} resolves to it)`;
      return { ok: false, refused: true, error: `refused: ${bad.address} is a ${nonPublicRange(bad.address)} address${via}; ${ALLOW_HINT}` };
    }
  }
  return { ok: true, address: addresses[0]! };
}
