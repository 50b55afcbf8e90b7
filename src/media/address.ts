/**
 * IP addresses for the remote-media fetcher's guard (README "Remote media"): parsing, the
 * special-use ranges that are never fetched from (private, loopback, link-local, unique-local,
 * multicast, unspecified, documentation, reserved, ...), and the operator's allow-list of CIDRs.
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the IPv4 address they carry.
 */

export type Ip = { v: 4; n: bigint } | { v: 6; n: bigint };

export interface Cidr {
  ip: Ip;
  bits: number;
}

function parseV4(s: string): bigint | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  let n = 0n;
  for (const p of parts) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return null;
    n = (n << 8n) | BigInt(p);
  }
  return n;
}

function parseGroups(side: string): bigint[] | null {
  if (side === "") return [];
  const groups = side.split(":");
  const out: bigint[] = [];
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    if (i === groups.length - 1 && g.includes(".")) {
      const v4 = parseV4(g);
      if (v4 === null) return null;
      out.push(v4 >> 16n, v4 & 0xffffn);
    } else {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
      out.push(BigInt(parseInt(g, 16)));
    }
  }
  return out;
}

function parseV6(s: string): bigint | null {
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const head = parseGroups(halves[0]!);
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<bigint>(missing).fill(0n), ...tail];
  return groups.reduce((n, g) => (n << 16n) | g, 0n);
}

/** An IPv4 or IPv6 address in its usual text form (IPv6 without brackets or zone), else null. */
export function parseIp(text: string): Ip | null {
  const s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (s.includes(":")) {
    const n = parseV6(s);
    return n === null ? null : { v: 6, n };
  }
  const n = parseV4(s);
  return n === null ? null : { v: 4, n };
}

const MAPPED_PREFIX = 0xffffn << 32n;

/** An IPv4-mapped IPv6 address as its IPv4 address; any other address as it is. */
export function unmap(ip: Ip): Ip {
  if (ip.v === 6 && ip.n >> 32n === 0xffffn) return { v: 4, n: ip.n & 0xffffffffn };
  return ip;
}

function width(v: 4 | 6): bigint {
  return v === 4 ? 32n : 128n;
}

export function inCidr(ip: Ip, cidr: Cidr): boolean {
  if (ip.v !== cidr.ip.v) return false;
  const shift = width(ip.v) - BigInt(cidr.bits);
  return ip.n >> shift === cidr.ip.n >> shift;
}

/** "10.0.0.0/8", "::1/128", or a bare address (a single host). Null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf("/");
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return null;
  const max = ip.v === 4 ? 32 : 128;
  if (slash < 0) return { ip, bits: max };
  const bitsText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max) return null;
  return { ip, bits: Number(bitsText) };
}

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
