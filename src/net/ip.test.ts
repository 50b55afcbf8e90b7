import { describe, expect, test } from "bun:test";
import { formatIp, inAny, parseCidr, parseCidrList, parseIp } from "./ip";

describe("addresses and CIDR blocks", () => {
  test.each([
    ["1.2.3.4", "1.2.3.4"],
    ["::ffff:1.2.3.4", "1.2.3.4"],
    ["::FFFF:0102:0304", "1.2.3.4"],
    ["::1", "0:0:0:0:0:0:0:1"],
    ["2001:db8::1", "2001:db8:0:0:0:0:0:1"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8:0:0:0:0:0:1"],
    ["::", "0:0:0:0:0:0:0:0"],
    [" 10.0.0.1 ", "10.0.0.1"],
  ])("%p parses as %p", (text, canonical) => {
    expect(formatIp(parseIp(text)!)).toBe(canonical);
  });

  test.each(["", "1.2.3", "1.2.3.256", "1.2.3.4.5", "01234.1.1.1", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", ":::", "g::1", "1.2.3.4::", "::1.2.3", "example.com", "1.2.3.4:80"])(
    "%p is not an address",
    (text) => {
      expect(parseIp(text)).toBeNull();
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
    expect(inAny(parseIp(addr)!, [parseCidr(range)!])).toBe(inside);
  });

  test.each(["10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0/8", "nginx", "/8"])("%p is not a block", (text) => {
    expect(parseCidr(text)).toBeNull();
  });

  test("a list: commas, spaces and empty entries; a bad entry is named", () => {
    expect(parseCidrList(" 10.0.0.0/8, ,fd00::/8,127.0.0.1 ")).toHaveLength(3);
    expect(parseCidrList("")).toEqual([]);
    expect(() => parseCidrList("10.0.0.0/8, proxy.internal")).toThrow('"proxy.internal" is not an IPv4 or IPv6 address or CIDR block');
  });
});

