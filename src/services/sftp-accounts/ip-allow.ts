import ipaddr from "ipaddr.js";

/**
 * True when `address` may log in under `whitelist` (IP addresses and CIDR
 * ranges, IPv4 or IPv6). An empty whitelist allows every address. An
 * IPv4-mapped IPv6 address (`::ffff:10.1.2.3`, how a dual-stack socket
 * reports an IPv4 peer) is compared as the IPv4 address it carries, against
 * IPv4 entries and against IPv6 ranges that cover the mapped form.
 */
export function ipAllowed(whitelist: readonly string[], address: string): boolean {
  if (whitelist.length === 0) return true;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address);
  } catch {
    return false;
  }
  return whitelist.some((entry) => matches(entry.trim(), addr));
}

function matches(entry: string, addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  try {
    if (entry.includes("/")) {
      const [net, bits] = ipaddr.parseCIDR(entry);
      if (net.kind() === addr.kind()) return addr.match([net, bits] as never);
      if (net.kind() === "ipv6" && addr.kind() === "ipv4") return (addr as ipaddr.IPv4).toIPv4MappedAddress().match(net as ipaddr.IPv6, bits);
      // An IPv4 range written for an IPv4-mapped IPv6 range is covered by process() above: addr is IPv4 then.
      return false;
    }
    const ip = ipaddr.process(entry);
    return ip.kind() === addr.kind() && ip.toNormalizedString() === addr.toNormalizedString();
  } catch {
    return false;
  }
}
