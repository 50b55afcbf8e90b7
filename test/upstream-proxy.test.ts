/**
 * Upstreams anywhere, end to end through the gateway: HTTP_PROXY / NO_PROXY from the
 * environment, and a route's own CA bundle named in SWITCHYARD_ROUTES. Bad settings stop
 * start-up naming the variable or the field, never echoing a password.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { loadConfig } from "../src/config";
import { createRouteRegistry } from "../src/upstream/registry";
import { startFakeUpstream } from "./support/fake-upstream";
import { startForwardProxy } from "./support/forward-proxy";
import { postChat } from "./support/chat-client";
import { startHarness, type Harness } from "./support/harness";

const fixtures = join(import.meta.dir, "fixtures/tls");
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

describe("upstream calls through a forward proxy", () => {
  test("HTTP_PROXY carries chat and the model list to the upstream; NO_PROXY sends them direct", async () => {
    const upstream = startFakeUpstream({ words: ["hello", " there"] });
    const proxy = startForwardProxy();
    cleanups.push(upstream.stop, proxy.stop);
    const run = async (env: Record<string, string>): Promise<Harness> => {
      const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url, HTTP_PROXY: proxy.url, SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "60", ...env });
      cleanups.push(() => h.stop());
      // The model list read at start (awaited here, so the order below is fixed).
      await h.server.services.upstreamModels.ready;
      const { key } = await h.account(10);
      const res = await postChat(h.base, key, { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).choices[0].message.content).toBe("hello there");
      return h;
    };
    await run({});
    expect(proxy.seen.map((s) => s.line)).toEqual([`GET ${upstream.url}/models HTTP/1.1`, `POST ${upstream.url}/chat/completions HTTP/1.1`]);
    await run({ NO_PROXY: "127.0.0.1" });
    expect(proxy.seen).toHaveLength(2);
  });
});

describe("start-up checks", () => {
  test("a proxy variable that is not an http:// URL stops start-up naming it, without its password", () => {
    expect(() => loadConfig({ HTTPS_PROXY: "socks5://u:hunter2@p:1080" })).toThrow("HTTPS_PROXY: must be an http:// proxy URL");
    expect(() => loadConfig({ HTTPS_PROXY: "socks5://u:hunter2@p:1080" })).not.toThrow(/hunter2/);
  });

  const routes = (tls: Record<string, string>, baseUrl = "https://engine.internal/v1") =>
    JSON.stringify({ upstreams: { a: { base_url: baseUrl, tls } }, models: { "glm-4.6": [{ upstream: "a" }] } });
  const registry = (text: string) => () => createRouteRegistry({ upstreamUrl: null, upstreamKey: null, routes: text, upstreamKeepAlive: true, proxies: { http: null, https: null, noProxy: [] } });

  test.each([
    [routes({ ca_file: "/nonexistent/ca.pem" }), "SWITCHYARD_ROUTES: /upstreams/a/tls/ca_file: cannot read the file"],
    [routes({ ca_file: join(fixtures, "../../upstream-proxy.test.ts") }), "SWITCHYARD_ROUTES: /upstreams/a/tls/ca_file: must be a PEM file"],
    [routes({ cert_file: join(fixtures, "client.crt") }), "SWITCHYARD_ROUTES: /upstreams/a/tls: cert_file and key_file go together"],
    [routes({ ca_file: join(fixtures, "localhost.crt") }, "http://engine.internal/v1"), "SWITCHYARD_ROUTES: /upstreams/a/tls: applies to https:// upstreams only"],
  ])("routes TLS files are checked at start-up (%#)", async (text, message) => {
    await expect(registry(text)()).rejects.toThrow(message);
  });

  test("a route's readable PEM files are accepted", async () => {
    await registry(routes({ ca_file: join(fixtures, "localhost.crt"), cert_file: join(fixtures, "client.crt"), key_file: join(fixtures, "client.key") }))();
  });
});
