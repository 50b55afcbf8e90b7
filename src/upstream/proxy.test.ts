import { describe, expect, test } from "bun:test";
import { ProxyConfigError, proxyFor, proxySettings } from "./proxy";

describe("proxySettings and proxyFor", () => {
  const env = { HTTP_PROXY: "http://proxy.internal:3128", HTTPS_PROXY: "http://user:p%40ss@secure-proxy:8080", NO_PROXY: "localhost,.svc.cluster.local,10.0.0.0/8,[::1],api.example.com:8443" };
  const s = proxySettings(env);
  test.each([
    ["http://vllm.internal:8000/v1", "proxy.internal:3128"],
    ["https://api.example.com/v1", "secure-proxy:8080"],
    ["https://api.example.com:8443/v1", null],
    ["http://localhost:8000/v1", null],
    ["http://engine.ns.svc.cluster.local/v1", null],
    ["http://svc.cluster.local/v1", null],
    ["http://10.1.2.3:8000/v1", null],
    ["http://11.1.2.3:8000/v1", "proxy.internal:3128"],
    ["http://[::1]:8000/v1", null],
    ["http://[::2]:8000/v1", "proxy.internal:3128"],
  ])("%s goes through %s", (url, via) => {
    const p = proxyFor(s, url);
    expect(p === null ? null : `${p.hostname}:${p.port}`).toBe(via);
  });

  test("credentials in the proxy URL become Proxy-Authorization, decoded", () => {
    expect(s.https!.authorization).toBe(`Basic ${Buffer.from("user:p@ss").toString("base64")}`);
    expect(s.https!.origin).toBe("http://secure-proxy:8080");
    expect(s.http!.authorization).toBeNull();
  });

  test("lower-case variables win; a bare host:port means http://", () => {
    const t = proxySettings({ http_proxy: "lower:1", HTTP_PROXY: "http://upper:2" });
    expect(`${t.http!.hostname}:${t.http!.port}`).toBe("lower:1");
  });

  test("NO_PROXY=* bypasses every upstream; no variables: no proxy", () => {
    expect(proxyFor(proxySettings({ HTTP_PROXY: "http://p:1", NO_PROXY: "*" }), "http://x/v1")).toBeNull();
    expect(proxyFor(proxySettings({}), "https://x/v1")).toBeNull();
  });

  test.each([
    [{ HTTPS_PROXY: "https://p:443" }, "HTTPS_PROXY: must be an http:// proxy URL"],
    [{ HTTP_PROXY: "http://p:1/some/path" }, "HTTP_PROXY: must be only scheme, host and port"],
    [{ no_proxy: "10.0.0.0/40", HTTP_PROXY: "http://p:1" }, "no_proxy: \"10.0.0.0/40\" is not a valid CIDR block"],
  ])("%j is refused, naming the variable", (e, message) => {
    expect(() => proxySettings(e)).toThrow(ProxyConfigError);
    expect(() => proxySettings(e)).toThrow(message);
  });

  test("a refused proxy URL never echoes its password", () => {
    expect(() => proxySettings({ HTTPS_PROXY: "https://u:hunter2@p:443" })).not.toThrow(/hunter2/);
  });
});
