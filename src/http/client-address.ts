/**
 * The client's address behind trusted proxies (docs/configuration.md "Exposure", SWITCHYARD_TRUSTED_PROXIES):
 * the per-address throttles of wrong credentials and of dashboard sign-ins key on it.
 *
 * The connection's peer is the client unless the peer is a trusted proxy. Then X-Forwarded-For is
 * walked from the right — each proxy appends the address it saw — skipping trusted proxies; the
 * first hop that is not one is the client. Entries to its left were written by that client (or by
 * proxies nobody vouches for) and are never believed. A peer that is not trusted has its
 * X-Forwarded-For ignored entirely, so nobody can pick the address they are throttled under.
 *
 * Addresses and blocks are src/net/ip.ts's: 10.0.0.0/8 also covers a peer reported as
 * ::ffff:10.1.2.3.
 */
import { formatIp, inAny, parseIp, type Cidr, type Ip } from "../net/ip";


/** An X-Forwarded-For hop without a port or brackets ("1.2.3.4:5678", "[::1]:80", "[::1]"). */
/** A peer or hop address; a link-local address's %zone says which interface, not who. */
function addressOf(text: string): Ip | null {
  const zone = text.indexOf("%");
  return parseIp(zone < 0 ? text : text.slice(0, zone));
}

function hopAddress(hop: string): Ip | null {
  const h = hop.trim();
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(h);
  if (bracket) return addressOf(bracket[1]!);
  const v4port = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(h);
  if (v4port) return addressOf(v4port[1]!);
  return addressOf(h);
}

/**
 * The client's address for a connection from `peer` carrying `forwardedFor` (the X-Forwarded-For
 * header, several headers joined by commas), given the trusted proxies. Canonical spelling (see
 * formatIp) when it parses; a hop that does not parse is the client as written (trimmed) —
 * it cannot be a trusted proxy, and whatever wrote it is the one throttled.
 */
export function clientAddress(peer: string, forwardedFor: string | null, trusted: readonly Cidr[]): string {
  const peerAddr = addressOf(peer);
  if (peerAddr === null) return peer;
  if (trusted.length === 0 || !forwardedFor || !inAny(peerAddr, trusted)) return formatIp(peerAddr);
  const hops = forwardedFor.split(",").map((h) => h.trim()).filter((h) => h !== "");
  let client = peerAddr;
  for (let i = hops.length - 1; i >= 0; i--) {
    const addr = hopAddress(hops[i]!);
    if (addr === null) return hops[i]!.slice(0, 100);
    client = addr;
    if (!inAny(addr, trusted)) break;
  }
  // Every hop trusted: the leftmost one is as far back as anyone vouches for.
  return formatIp(client);
}
