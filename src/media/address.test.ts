import { describe, expect, test } from "bun:test";
import { mayConnect, parseCidr, parseIp, specialUse } from "./address";
import { ConfigError, loadConfig } from "../config";

describe("specialUse: every address the media fetcher must not reach, and public ones", () => {
  const table: [string, string | null][] = [
    // IPv4
    ["0.0.0.0", "unspecified"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.1", "shared (carrier-grade NAT)"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.169.254", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.8", "IETF protocol assignments"],
    ["192.0.2.1", "documentation"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["8.8.8.8", null],
    ["1.1.1.1", null],
    ["172.32.0.1", null],
    ["100.128.0.1", null],
    ["169.255.0.1", null],
    // IPv6
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456:789a::1", "unique-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["2001::1", "IETF protocol assignments"],
    ["2002:a00:1::1", "6to4"],
    ["64:ff9b::a9fe:a9fe", "NAT64"],
    ["100::1", "discard"],
    ["::2", "reserved"],
    ["::7f00:1", "reserved"],
    ["4000::1", "reserved"],
    ["2606:4700:4700::1111", null],
    ["2a00:1450:4001:80b::200e", null],
    // IPv4-mapped IPv6: judged as the IPv4 address inside
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["0:0:0:0:0:ffff:c0a8:101", "private"],
    ["::ffff:8.8.8.8", null],
  ];
  test.each(table)("%s → %p", (text, expected) => {
    const ip = parseIp(text);
    expect(ip).not.toBeNull();
    expect(specialUse(ip!)).toBe(expected);
    expect(mayConnect(ip!, [])).toBe(expected === null);
  });
});

describe("parseIp refuses what is not one address", () => {
  test.each(["", "localhost", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-4", "::1::", "1:2:3:4:5:6:7:8:9", "12345::", "fe80::1%eth0", "::ffff:1.2.3", "g::1", "1:2:3:4:5:6:7:8::"])("%p", (text) => {
    expect(parseIp(text)).toBeNull();
  });
});

describe("the operator's allow-list", () => {
  test("an allowed range opens special addresses inside it, and only those", () => {
    const allow = [parseCidr("127.0.0.1")!, parseCidr("10.1.0.0/16")!, parseCidr("fd00::/8")!];
    expect(mayConnect(parseIp("127.0.0.1")!, allow)).toBe(true);
    expect(mayConnect(parseIp("::ffff:127.0.0.1")!, allow)).toBe(true);
    expect(mayConnect(parseIp("127.0.0.2")!, allow)).toBe(false);
    expect(mayConnect(parseIp("10.1.200.3")!, allow)).toBe(true);
    expect(mayConnect(parseIp("10.2.0.1")!, allow)).toBe(false);
    expect(mayConnect(parseIp("fd00::5")!, allow)).toBe(true);
    expect(mayConnect(parseIp("::1")!, allow)).toBe(false);
    expect(mayConnect(parseIp("169.254.169.254")!, allow)).toBe(false);
  });

  test("SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS: addresses and CIDRs, default none; a bad entry names the variable", () => {
    expect(loadConfig({}).remoteMediaAllow).toEqual([]);
    expect(loadConfig({ SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS: "127.0.0.1, 10.0.0.0/8,::1/128" }).remoteMediaAllow.map((c) => c.bits)).toEqual([32, 8, 128]);
    for (const bad of ["localhost", "10.0.0.0/33", "::1/129", "10.0.0.0/x"]) {
      expect(() => loadConfig({ SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS: bad })).toThrow("SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS");
    }
  });

  test("the media settings' defaults", () => {
    const c = loadConfig({});
    expect([c.remoteMedia, c.remoteMediaMaxBytes, c.remoteMediaTimeoutMs]).toEqual(["fetch", 20 * 1024 * 1024, 10_000]);
    expect([c.mediaMaxParts, c.imageMaxTotalPixels, c.imageDecodeConcurrency, c.imageDecodeMsPerMinute]).toEqual([20, 200_000_000, 2, 30_000]);
    expect(() => loadConfig({ SWITCHYARD_REMOTE_MEDIA: "yes" })).toThrow("SWITCHYARD_REMOTE_MEDIA");
  });
});
