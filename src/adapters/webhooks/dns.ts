import { lookup } from "node:dns/promises";
import type { HostResolver, ResolvedAddress } from "./port";

/** The system resolver (getaddrinfo: /etc/hosts, then DNS), every address, bounded in time. */
export function systemResolver(timeoutMs = 5_000): HostResolver {
  return async (host) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`resolving ${host} took longer than ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const found = await Promise.race([lookup(host, { all: true, verbatim: true }), timeout]);
      return found.map((a): ResolvedAddress => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
    } finally {
      clearTimeout(timer);
    }
  };
}
