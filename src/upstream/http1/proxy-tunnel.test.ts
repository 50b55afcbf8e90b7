/**
 * The upstream client through forward proxies and with a route's own TLS material: absolute-form
 * requests for http:// upstreams, CONNECT tunnels for https:// ones, a per-upstream CA bundle
 * instead of the bundled CAs, and a client certificate for servers that require one.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startForwardProxy } from "../../../test/support/forward-proxy";
import { ConnectError, request1, targetOf, type Target, type TlsOptions } from "./client";
import { proxySettings, proxyFor } from "../proxy";
import { readAllText } from "./body";

const fixtures = join(import.meta.dir, "../../../test/fixtures/tls");
const pem = (name: string) => readFileSync(join(fixtures, name), "utf8");
const serverCa = pem("localhost.crt");
const client: TlsOptions = { cert: pem("client.crt"), key: pem("client.key") };

const stops: Array<() => void> = [];
afterAll(() => stops.forEach((stop) => stop()));

function origin(tls: boolean, requireClientCert = false) {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: tls
      ? { cert: serverCa, key: pem("localhost.key"), ...(requireClientCert ? { ca: client.cert, requestCert: true, rejectUnauthorized: true } : {}) }
      : undefined,
    fetch: async (req) => new Response(`${tls ? "secure" : "plain"} ${new URL(req.url).pathname} ${(await req.text()).length}`),
  });
  stops.push(() => server.stop(true));
  return server;
}

async function post(target: Target): Promise<string> {
  const res = await request1({ target, method: "POST", path: "/chat/completions", headers: {}, body: "{}", signal: new AbortController().signal, connectTimeoutMs: 5000 });
  return `${res.status} ${await readAllText(res.body)}`;
}

describe("through a forward proxy", () => {
  test("an http:// upstream: the request goes to the proxy in absolute form, with its credentials", async () => {
    const server = origin(false);
    const proxy = startForwardProxy();
    stops.push(proxy.stop);
    const base = `http://127.0.0.1:${server.port}/v1`;
    const settings = proxySettings({ HTTP_PROXY: proxy.url.replace("http://", "http://alice:s3cret@") });
    expect(await post(targetOf(base, { proxy: proxyFor(settings, base) }))).toBe("200 plain /v1/chat/completions 2");
    expect(proxy.seen).toEqual([{ line: `POST ${base}/chat/completions HTTP/1.1`, authorization: `Basic ${btoa("alice:s3cret")}` }]);
  });

  test("an https:// upstream: a CONNECT tunnel, TLS verified end to end against the route's CA, client certificate presented", async () => {
    const server = origin(true, true);
    const proxy = startForwardProxy();
    stops.push(proxy.stop);
    const base = `https://localhost:${server.port}/v1`;
    const via = proxyFor(proxySettings({ HTTPS_PROXY: proxy.url }), base);
    expect(await post(targetOf(base, { proxy: via, tlsOptions: { ca: serverCa, ...client } }))).toBe("200 secure /v1/chat/completions 2");
    expect(proxy.seen.map((s) => s.line)).toEqual([`CONNECT localhost:${server.port} HTTP/1.1`]);
    // Without the route's CA the tunnelled certificate is not trusted.
    const err = await post(targetOf(base, { proxy: via, tlsOptions: client })).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as Error).message).toStartWith("TLS refused");
  });

  test("a proxy that refuses the tunnel fails the connection (a route failure), naming the status only", async () => {
    const proxy = startForwardProxy();
    stops.push(proxy.stop);
    proxy.refuseWith = 407;
    const base = "https://localhost:9/v1";
    const err = await post(targetOf(base, { proxy: proxyFor(proxySettings({ HTTPS_PROXY: proxy.url }), base) })).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as Error).message).toBe("proxy answered CONNECT with 407");
  });
});

describe("a route's own TLS material, without a proxy", () => {
  test("its CA bundle is trusted for that route alone", async () => {
    const server = origin(true);
    const base = `https://localhost:${server.port}/v1`;
    expect(await post(targetOf(base, { tlsOptions: { ca: serverCa } }))).toBe("200 secure /v1/chat/completions 2");
    const err = await post(targetOf(base)).catch((e) => e);
    expect((err as Error).message).toStartWith("TLS refused");
  });

  test("a server that requires a client certificate accepts the route's and refuses a connection without one", async () => {
    const server = origin(true, true);
    const base = `https://localhost:${server.port}/v1`;
    expect(await post(targetOf(base, { tlsOptions: { ca: serverCa, ...client } }))).toBe("200 secure /v1/chat/completions 2");
    const err = await post(targetOf(base, { tlsOptions: { ca: serverCa } })).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
  });

  test("connections with different TLS material or proxies are pooled apart", () => {
    const base = "https://localhost:1/v1";
    const keys = new Set([targetOf(base).origin, targetOf(base, { tlsOptions: { ca: serverCa } }).origin, targetOf(base, { tlsOptions: { ca: serverCa, ...client } }).origin,
      targetOf(base, { proxy: proxyFor(proxySettings({ HTTPS_PROXY: "http://p:1" }), base) }).origin]);
    expect(keys.size).toBe(4);
  });
});
