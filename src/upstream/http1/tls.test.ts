/**
 * The upstream client over TLS: a certificate is verified against the trusted CAs and for the
 * name asked for (a route's own CA bundle and client certificate: proxy-tunnel.test.ts).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ConnectError, request1, targetOf } from "./client";

const servers: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

const post = (url: string) =>
  request1({ target: targetOf(url), method: "POST", path: "/chat/completions", headers: { "content-type": "application/json" }, body: "{}", signal: new AbortController().signal, connectTimeoutMs: 2_000 });

describe("request1 over TLS", () => {
  const fixtures = join(import.meta.dir, "../../../test/fixtures/tls");

  test("a certificate no trusted CA signed is refused", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: Bun.file(join(fixtures, "localhost.crt")), key: Bun.file(join(fixtures, "localhost.key")) },
      fetch: () => new Response("should not be reached"),
    });
    servers.push(server);
    const err = await post(`https://localhost:${server.port}/v1`).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as Error).message).toStartWith("TLS refused");
  });

  test("with the CA trusted, the reply is read; a name the certificate does not carry is refused", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: Bun.file(join(fixtures, "localhost.crt")), key: Bun.file(join(fixtures, "localhost.key")) },
      fetch: async (req) => new Response(`secure ${new URL(req.url).pathname} ${(await req.text()).length}`),
    });
    servers.push(server);
    // A child process trusts the fixture's CA (NODE_EXTRA_CA_CERTS is read at start-up).
    const script = `
      import { request1, targetOf } from ${JSON.stringify(join(import.meta.dir, "client.ts"))};
      const go = async (host) => {
        try {
          const res = await request1({ target: targetOf("https://" + host + ":${server.port}/v1"), method: "POST", path: "/chat/completions", headers: {}, body: "{}", signal: new AbortController().signal, connectTimeoutMs: 5000 });
          let t = ""; for (;;) { const r = await res.body.read(); if (r.done) break; t += new TextDecoder().decode(r.value); }
          return res.status + " " + t;
        } catch (e) { return "error " + e.constructor.name + ": " + e.message; }
      };
      console.log(JSON.stringify([await go("localhost"), await go("127.0.0.1")]));
      process.exit(0);`;
    const child = Bun.spawn([process.execPath, "-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(fixtures, "localhost.crt") }, stdout: "pipe", stderr: "pipe" });
    const out = await new Response(child.stdout).text();
    await child.exited;
    const [byName, byAddress] = JSON.parse(out.trim().split("\n").pop()!) as string[];
    expect(byName).toBe("200 secure /v1/chat/completions 2");
    expect(byAddress).toStartWith("error ConnectError: TLS refused: Hostname/IP does not match");
  });
});
