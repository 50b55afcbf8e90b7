/**
 * IP addresses and CIDR blocks, parsed once for every place that needs them: trusted proxies
 * (http/client-address.ts), the remote-media guard (media/address.ts) and NO_PROXY
 * (upstream/proxy.ts). Addresses are numbers (IPv4 32-bit, IPv6 128-bit); an IPv4-mapped IPv6
 * address (::ffff:a.b.c.d) is compared as the IPv4 address it carries.
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
  // A dotted quad may only end the address.
  if (halves.length === 2 && halves[0]!.includes(".")) return null;
  const head = parseGroups(halves[0]!);
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  return [...head, ...Array<bigint>(missing).fill(0n), ...tail].reduce((n, g) => (n << 16n) | g, 0n);
}

/** An IPv4 or IPv6 address in its usual text form ([brackets] allowed, no %zone), else null. */
export function parseIp(text: string): Ip | null {
  let s = text.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  if (s.includes(":")) {
    const n = parseV6(s);
    return n === null ? null : { v: 6, n };
  }
  const n = parseV4(s);
  return n === null ? null : { v: 4, n };
}

/** An IPv4-mapped IPv6 address as its IPv4 address; any other address as it is. */
export function unmap(ip: Ip): Ip {
  if (ip.v === 6 && ip.n >> 32n === 0xffffn) return { v: 4, n: ip.n & 0xffffffffn };
  return ip;
}

/** Dotted for IPv4 (mapped or not), eight hexadecimal groups for IPv6: one spelling per address. */
export function formatIp(address: Ip): string {
  const ip = unmap(address);
  if (ip.v === 4) return [24n, 16n, 8n, 0n].map((s) => String((ip.n >> s) & 0xffn)).join(".");
  const groups: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(((ip.n >> s) & 0xffffn).toString(16));
  return groups.join(":");
}

/** "10.0.0.0/8", "::1/128", or a bare address (a single host). Null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const t = text.trim();
  const slash = t.indexOf("/");
  const ip = parseIp(slash < 0 ? t : t.slice(0, slash));
  if (!ip) return null;
  const max = ip.v === 4 ? 32 : 128;
  if (slash < 0) return { ip, bits: max };
  const bitsText = t.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max) return null;
  return { ip, bits: Number(bitsText) };
}

/**
 * A comma-separated list of addresses and CIDR blocks; throws an Error naming the first entry that
 * is neither (callers word it as a configuration error).
 */
export function parseCidrList(text: string): Cidr[] {
  const out: Cidr[] = [];
  for (const entry of text.split(",")) {
    const e = entry.trim();
    if (e === "") continue;
    const c = parseCidr(e);
    if (!c) throw new Error(`"${e}" is not an IPv4 or IPv6 address or CIDR block (e.g. 10.0.0.0/8, fd00::/8)`);
    out.push(c);
  }
  return out;
}

/** IPv4 as IPv4-mapped IPv6. */
function mapped(ip: Ip): Ip {
  return ip.v === 4 ? { v: 6, n: (0xffffn << 32n) | ip.n } : ip;
}

/**
 * Whether the address is in the block. An address is tried in both of its spellings, IPv4 and
 * IPv4-mapped IPv6: 10.0.0.0/8 holds ::ffff:10.1.2.3, and ::/0 holds 1.2.3.4.
 */
export function inCidr(address: Ip, cidr: Cidr): boolean {
  for (const ip of [unmap(address), mapped(address)]) {
    if (ip.v !== cidr.ip.v) continue;
    const shift = BigInt((ip.v === 4 ? 32 : 128) - cidr.bits);
    if (ip.n >> shift === cidr.ip.n >> shift) return true;
  }
  return false;
}

export function inAny(address: Ip, cidrs: readonly Cidr[]): boolean {
  return cidrs.some((c) => inCidr(address, c));
}
