import { describe, expect, test } from "bun:test";
import { clientAddress, formatAddress, inRanges, parseAddress, parseRange, parseRangeList } from "./client-address";

describe("addresses and CIDR blocks", () => {
  test.each([
    ["1.2.3.4", "1.2.3.4"],
    ["::ffff:1.2.3.4", "1.2.3.4"],
    ["::FFFF:0102:0304", "1.2.3.4"],
    ["::1", "0:0:0:0:0:0:0:1"],
    ["2001:db8::1", "2001:db8:0:0:0:0:0:1"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8:0:0:0:0:0:1"],
    ["fe80::1%eth0", "fe80:0:0:0:0:0:0:1"],
    ["::", "0:0:0:0:0:0:0:0"],
    [" 10.0.0.1 ", "10.0.0.1"],
  ])("%p parses as %p", (text, canonical) => {
    expect(formatAddress(parseAddress(text)!)).toBe(canonical);
  });

  test.each(["", "1.2.3", "1.2.3.256", "1.2.3.4.5", "01234.1.1.1", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", ":::", "g::1", "1.2.3.4::", "::1.2.3", "example.com", "1.2.3.4:80"])(
    "%p is not an address",
    (text) => {
      expect(parseAddress(text)).toBeNull();
    },
  );

  test.each([
    ["10.0.0.0/8", "10.255.1.2", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["10.0.0.0/8", "::ffff:10.9.9.9", true],
    ["192.168.1.7", "192.168.1.7", true],
    ["192.168.1.7", "192.168.1.8", false],
    ["192.168.1.7/32", "192.168.1.7", true],
    ["0.0.0.0/0", "203.0.113.9", true],
    ["0.0.0.0/0", "2001:db8::1", false],
    ["fd00::/8", "fd12:3456::1", true],
    ["fd00::/8", "fe80::1", false],
    ["::/0", "2001:db8::1", true],
    ["::/0", "1.2.3.4", true],
    ["2001:db8::/32", "2001:db8:ffff::1", true],
    ["2001:db8::/32", "2001:db9::1", false],
    ["::1", "::1", true],
    ["::1", "127.0.0.1", false],
    ["10.1.2.3/8", "10.200.0.1", true], // host bits in the block are ignored
  ])("%p contains %p: %p", (range, addr, inside) => {
    expect(inRanges(parseAddress(addr)!, [parseRange(range)!])).toBe(inside);
  });

  test.each(["10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0/8", "nginx", "/8"])("%p is not a block", (text) => {
    expect(parseRange(text)).toBeNull();
  });

  test("a list: commas, spaces and empty entries; a bad entry is named", () => {
    expect(parseRangeList(" 10.0.0.0/8, ,fd00::/8,127.0.0.1 ")).toHaveLength(3);
    expect(parseRangeList("")).toEqual([]);
    expect(() => parseRangeList("10.0.0.0/8, proxy.internal")).toThrow('"proxy.internal" is not an IPv4 or IPv6 address or CIDR block');
  });
});

describe("the client behind trusted proxies", () => {
  const trusted = parseRangeList("10.0.0.0/8, fd00::/8");
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
    ["10.0.0.2", "[2001:db8::5]:4711", trusted, "2001:db8:0:0:0:0:0:5"],
    ["10.0.0.2", "198.51.100.1:4711", trusted, "198.51.100.1"],
    ["10.0.0.2", "6.6.6.6, not-an-address", trusted, "not-an-address"],
    ["10.0.0.2", " , ", trusted, "10.0.0.2"],
    ["unknown", "198.51.100.1", trusted, "unknown"],
  ])("peer %p with X-Forwarded-For %p → client", (peer, xff, ranges, client) => {
    expect(clientAddress(peer as string, xff as string | null, ranges as typeof trusted)).toBe(client as string);
  });
});
