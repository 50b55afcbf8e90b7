/**
 * IP addresses for the remote-media fetcher's guard (docs/chat.md, "Remote media"): parsing, the
 * special-use ranges that are never fetched from (private, loopback, link-local, unique-local,
 * multicast, unspecified, documentation, reserved, ...), and the operator's allow-list of CIDRs.
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the IPv4 address they carry.
 * Parsing and blocks are src/net/ip.ts's.
 */
import { inCidr, parseCidr, unmap, type Cidr, type Ip } from "../net/ip";

export { parseCidr, parseIp, type Cidr, type Ip } from "../net/ip";

function cidr(text: string): Cidr {
  const c = parseCidr(text);
  if (!c) throw new Error(`bad built-in range ${text}`);
  return c;
}

/** Ranges that are not the public internet (IANA special-purpose registries), by name. */
const SPECIAL: [Cidr, string][] = (
  [
    ["0.0.0.0/8", "unspecified"],
    ["10.0.0.0/8", "private"],
    ["100.64.0.0/10", "shared (carrier-grade NAT)"],
    ["127.0.0.0/8", "loopback"],
    ["169.254.0.0/16", "link-local"],
    ["172.16.0.0/12", "private"],
    ["192.0.0.0/24", "IETF protocol assignments"],
    ["192.0.2.0/24", "documentation"],
    ["192.88.99.0/24", "6to4 relay"],
    ["192.168.0.0/16", "private"],
    ["198.18.0.0/15", "benchmarking"],
    ["198.51.100.0/24", "documentation"],
    ["203.0.113.0/24", "documentation"],
    ["224.0.0.0/4", "multicast"],
    ["240.0.0.0/4", "reserved"],
    ["::/128", "unspecified"],
    ["::1/128", "loopback"],
    ["64:ff9b::/96", "NAT64"],
    ["64:ff9b:1::/48", "NAT64 (local)"],
    ["100::/64", "discard"],
    ["2001::/23", "IETF protocol assignments"],
    ["2001:db8::/32", "documentation"],
    ["2002::/16", "6to4"],
    ["fc00::/7", "unique-local"],
    ["fe80::/10", "link-local"],
    ["fec0::/10", "site-local"],
    ["ff00::/8", "multicast"],
  ] as const
).map(([c, name]) => [cidr(c), name]);

const GLOBAL_UNICAST_V6 = cidr("2000::/3");

/**
 * The special-use class of an address ("loopback", "private", ...), or null for a public one.
 * IPv6 outside 2000::/3 (global unicast) is "reserved" whatever else it is.
 */
export function specialUse(address: Ip): string | null {
  const ip = unmap(address);
  for (const [range, name] of SPECIAL) if (inCidr(ip, range)) return name;
  if (ip.v === 6 && !inCidr(ip, GLOBAL_UNICAST_V6)) return "reserved";
  return null;
}

/** Whether the fetcher may connect to this address: in the operator's allow-list, or public. */
export function mayConnect(address: Ip, allow: readonly Cidr[]): boolean {
  const ip = unmap(address);
  if (allow.some((c) => inCidr(ip, c) || inCidr(address, c))) return true;
  return specialUse(ip) === null;
}
