import { describe, expect, test } from "bun:test";
import { clientAddress } from "./client-address";
import { parseCidrList } from "../net/ip";

describe("the client behind trusted proxies", () => {
  const trusted = parseCidrList("10.0.0.0/8, fd00::/8");
  test.each([
    // peer, X-Forwarded-For, trusted?, client
    ["203.0.113.5", null, trusted, "203.0.113.5"],
    ["203.0.113.5", "198.51.100.1", trusted, "203.0.113.5"], // an untrusted peer's header is ignored
    ["10.0.0.2", "198.51.100.1", [], "10.0.0.2"], // no trusted proxies: nothing is believed
    ["10.0.0.2", null, trusted, "10.0.0.2"], // a trusted peer without the header is the client
    ["10.0.0.2", "198.51.100.1", trusted, "198.51.100.1"],
    ["::ffff:10.0.0.2", "198.51.100.1", trusted, "198.51.100.1"],
    ["10.0.0.2", "6.6.6.6, 198.51.100.1", trusted, "198.51.100.1"], // the client's own forged entry is left of the real one
    ["10.0.0.2", "6.6.6.6, 198.51.100.1, 10.0.0.9", trusted, "198.51.100.1"], // two proxies
    ["10.0.0.2", "6.6.6.6,198.51.100.1,10.0.0.9,10.3.3.3", trusted, "198.51.100.1"],
    ["10.0.0.2", "10.0.0.7, 10.0.0.9", trusted, "10.0.0.7"], // every hop trusted: the leftmost
    ["fd00::1", "2001:db8::5", trusted, "2001:db8:0:0:0:0:0:5"],
    ["fe80::1%eth0", null, trusted, "fe80:0:0:0:0:0:0:1"], // a zone names the interface, not the client
    ["10.0.0.2", "[2001:db8::5]:4711", trusted, "2001:db8:0:0:0:0:0:5"],
    ["10.0.0.2", "198.51.100.1:4711", trusted, "198.51.100.1"],
    ["10.0.0.2", "6.6.6.6, not-an-address", trusted, "not-an-address"],
    ["10.0.0.2", " , ", trusted, "10.0.0.2"],
    ["unknown", "198.51.100.1", trusted, "unknown"],
  ])("peer %p with X-Forwarded-For %p → client", (peer, xff, ranges, client) => {
    expect(clientAddress(peer as string, xff as string | null, ranges as typeof trusted)).toBe(client as string);
  });
});
