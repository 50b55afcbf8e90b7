/**
 * The client's address behind trusted proxies (README "Exposure", SWITCHYARD_TRUSTED_PROXIES):
 * the per-address throttles of wrong credentials and of dashboard sign-ins key on it.
 *
 * The connection's peer is the client unless the peer is a trusted proxy. Then X-Forwarded-For is
 * walked from the right — each proxy appends the address it saw — skipping trusted proxies; the
 * first hop that is not one is the client. Entries to its left were written by that client (or by
 * proxies nobody vouches for) and are never believed. A peer that is not trusted has its
 * X-Forwarded-For ignored entirely, so nobody can pick the address they are throttled under.
 *
 * Addresses are compared as 128-bit numbers: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), so
 * 10.0.0.0/8 also covers a peer reported as ::ffff:10.1.2.3.
 */

/** A CIDR block: `bits` leading bits of `base` (both in the 128-bit space). */
export interface AddressRange {
  base: bigint;
  bits: number;
}

const MAPPED_V4 = 0xffffn << 32n;

function parseV4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let n = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = (n << 8n) | BigInt(Number(p));
  }
  return n;
}

function parseV6(text: string): bigint | null {
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (half: string): number[] | null => {
    if (half === "") return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseV4(p);
        if (v4 === null) return null;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return null;
  // A dotted quad may only end the address.
  if (halves.length === 2 && halves[0]!.includes(".")) return null;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return null;
  let n = 0n;
  for (const g of [...head, ...Array(fill).fill(0), ...tail]) n = (n << 16n) | BigInt(g);
  return n;
}

/** An IPv4 or IPv6 address as a 128-bit number (IPv4 mapped into ::ffff:0:0/96), or null. */
export function parseAddress(text: string): bigint | null {
  const t = text.trim();
  if (t.includes(":")) return parseV6(t);
  const v4 = parseV4(t);
  return v4 === null ? null : MAPPED_V4 | v4;
}

/** A canonical spelling of a parsed address: dotted for IPv4 (mapped or not), full groups for IPv6. */
export function formatAddress(n: bigint): string {
  if (n >> 32n === 0xffffn) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join(".");
  const groups: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(((n >> s) & 0xffffn).toString(16));
  return groups.join(":");
}

/** One address or CIDR block (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`); null when it is neither. */
export function parseRange(text: string): AddressRange | null {
  const slash = text.indexOf("/");
  const addr = parseAddress(slash < 0 ? text : text.slice(0, slash));
  if (addr === null) return null;
  const v4 = !text.slice(0, slash < 0 ? undefined : slash).includes(":");
  const width = v4 ? 32 : 128;
  let prefix = width;
  if (slash >= 0) {
    const p = text.slice(slash + 1).trim();
    if (!/^\d{1,3}$/.test(p) || Number(p) > width) return null;
    prefix = Number(p);
  }
  const bits = prefix + (128 - width);
  const mask = bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(128 - bits);
  return { base: addr & mask, bits };
}

/**
 * A comma-separated list of addresses and CIDR blocks; throws an Error naming the first entry that
 * is neither (the caller words it as a configuration error).
 */
export function parseRangeList(text: string): AddressRange[] {
  const out: AddressRange[] = [];
  for (const entry of text.split(",")) {
    const e = entry.trim();
    if (e === "") continue;
    const range = parseRange(e);
    if (!range) throw new Error(`"${e}" is not an IPv4 or IPv6 address or CIDR block (e.g. 10.0.0.0/8, fd00::/8)`);
    out.push(range);
  }
  return out;
}

export function inRanges(addr: bigint, ranges: readonly AddressRange[]): boolean {
  for (const r of ranges) if (r.bits === 0 || addr >> BigInt(128 - r.bits) === r.base >> BigInt(128 - r.bits)) return true;
  return false;
}

/** An X-Forwarded-For hop without a port or brackets ("1.2.3.4:5678", "[::1]:80", "[::1]"). */
function hopAddress(hop: string): bigint | null {
  const h = hop.trim();
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(h);
  if (bracket) return parseAddress(bracket[1]!);
  const v4port = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(h);
  if (v4port) return parseAddress(v4port[1]!);
  return parseAddress(h);
}

/**
 * The client's address for a connection from `peer` carrying `forwardedFor` (the X-Forwarded-For
 * header, several headers joined by commas), given the trusted proxies. Canonical spelling (see
 * formatAddress) when it parses; a hop that does not parse is the client as written (trimmed) —
 * it cannot be a trusted proxy, and whatever wrote it is the one throttled.
 */
export function clientAddress(peer: string, forwardedFor: string | null, trusted: readonly AddressRange[]): string {
  const peerAddr = parseAddress(peer);
  if (peerAddr === null) return peer;
  if (trusted.length === 0 || !forwardedFor || !inRanges(peerAddr, trusted)) return formatAddress(peerAddr);
  const hops = forwardedFor.split(",").map((h) => h.trim()).filter((h) => h !== "");
  let client = peerAddr;
  for (let i = hops.length - 1; i >= 0; i--) {
    const addr = hopAddress(hops[i]!);
    if (addr === null) return hops[i]!.slice(0, 100);
    client = addr;
    if (!inRanges(addr, trusted)) break;
  }
  // Every hop trusted: the leftmost one is as far back as anyone vouches for.
  return formatAddress(client);
}
