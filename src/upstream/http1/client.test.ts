/**
 * The upstream HTTP/1.1 client against real sockets: raw TCP servers (Bun.listen) that answer
 * exactly the bytes a test scripts — well-behaved, malformed, or hostile — plus a TLS server.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { readAllText as text } from "./body";
import { rawUpstream, type RawPeer, type RawUpstream } from "../../../test/support/raw-upstream";
import { abortWith, ConnectError, ConnectionClosed, idleConnections, ProtocolError, request1, targetOf } from "./client";

const servers: { stop(force?: boolean): void }[] = [];
/** A raw server stopped after the test: `answer` is called with each complete request. */
function rawServer(answer: (socket: Socket<RawPeer>, request: string, peer: RawPeer) => void): RawUpstream {
  const s = rawUpstream(answer);
  servers.push(s);
  return s;
}

afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

const post = (url: string, body = "{}", signal = new AbortController().signal) =>
  request1({ target: targetOf(url), method: "POST", path: "/chat/completions", headers: { "content-type": "application/json" }, body, signal, connectTimeoutMs: 2_000 });

describe("request1", () => {
  test("sends host, path, content-length and the body; reads a content-length reply; reuses the connection", async () => {
    const seen: string[] = [];
    const s = rawServer((sock, req) => {
      seen.push(req);
      sock.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"ok\":true}");
    });
    for (let i = 0; i < 3; i++) {
      const res = await post(s.url, `{"n":${i}}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(await text(res.body)).toBe('{"ok":true}');
    }
    expect(seen[0]).toStartWith("POST /v1/chat/completions HTTP/1.1\r\n");
    expect(seen[0]).toContain(`host: ${new URL(s.url).host}\r\n`);
    expect(seen[0]).toContain("accept-encoding: identity\r\n");
    expect(seen[2]).toEndWith('\r\n\r\n{"n":2}');
    expect(s.connections()).toBe(1);
    expect(idleConnections(new URL(s.url).origin)).toBe(1);
  });

  test("a chunked reply written a byte at a time, and a close-delimited one", async () => {
    const reply = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\n";
    const chunked = rawServer(async (sock) => {
      for (const ch of reply) {
        sock.write(ch);
        await Bun.sleep(0);
      }
    });
    expect(await text((await post(chunked.url)).body)).toBe("hello world");
    expect(idleConnections(new URL(chunked.url).origin)).toBe(1);

    const closing = rawServer((sock) => {
      sock.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end");
      sock.end();
    });
    expect(await text((await post(closing.url)).body)).toBe("until the end");
    expect(idleConnections(new URL(closing.url).origin)).toBe(0);
  });

  test("interim 100 and 103 answers are skipped; 204 has no body", async () => {
    const s = rawServer((sock, req) => {
      if (req.includes('"empty"')) return void sock.write("HTTP/1.1 204 No Content\r\n\r\n");
      sock.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok");
    });
    const res = await post(s.url);
    expect(res.status).toBe(201);
    expect(await text(res.body)).toBe("ok");
    const empty = await post(s.url, '"empty"');
    expect(empty.status).toBe(204);
    expect(await empty.body.read()).toEqual({ done: true });
  });

  test.each([
    ["a malformed status line", "HTTP/1.1 2OO OK\r\n\r\n"],
    ["a header line without a colon", "HTTP/1.1 200 OK\r\nbroken header\r\n\r\n"],
    ["differing content-lengths (smuggling)", "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!"],
    ["a negative content-length", "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n"],
    ["a content coding we did not ask for", "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 2\r\n\r\nxx"],
    ["a head over 64 KiB", `HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(70_000)}\r\n\r\n`],
    ["a protocol switch", "HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\n\r\n"],
    ["a transfer coding besides chunked", "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n0\r\n\r\n"],
    ["a status below 100", "HTTP/1.1 099 Low\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"],
  ])("%s is a ProtocolError and the connection is not reused", async (_name, reply) => {
    const s = rawServer((sock) => void sock.write(reply));
    const error = await post(s.url).then(() => null, (e) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(idleConnections(new URL(s.url).origin)).toBe(0);
  });

  test.each([
    ["an invalid chunk size", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"],
    ["chunk data longer than its size", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n"],
  ])("%s fails the body with a ProtocolError", async (_name, reply) => {
    const s = rawServer((sock) => void sock.write(reply));
    const res = await post(s.url);
    expect(await text(res.body).catch((e) => e)).toBeInstanceOf(ProtocolError);
  });

  test("a connection that closes mid-body fails the read with ConnectionClosed", async () => {
    const s = rawServer((sock) => {
      sock.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part");
      sock.end();
    });
    const res = await post(s.url);
    expect(await text(res.body).catch((e) => e)).toBeInstanceOf(ConnectionClosed);
  });

  test("a pooled connection the server closed as the request arrived is retried once on a new one", async () => {
    const s = rawServer((sock, _req, peer) => {
      // The first connection answers once, then drops the next request without a word.
      if (peer.id === 1 && s.connections() === 1 && answered++ >= 1) return void sock.terminate();
      sock.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    });
    let answered = 0;
    expect(await text((await post(s.url)).body)).toBe("ok");
    expect(await text((await post(s.url)).body)).toBe("ok");
    expect(s.connections()).toBe(2);
  });

  test.each([
    ["an HTTP/1.0 reply", "HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok"],
    ["a reply framed both ways (smuggling)", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n"],
    ["an error reply", "HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\nok"],
    ["a reply saying connection: close", "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"],
  ])("%s is read but its connection is not kept", async (_name, reply) => {
    const s = rawServer((sock) => void sock.write(reply));
    const res = await post(s.url);
    expect(await text(res.body)).toBe("ok");
    expect(idleConnections(new URL(s.url).origin)).toBe(0);
  });

  test("a pooled connection that closes after the upstream worked on the request is not sent again", async () => {
    let requests = 0;
    const s = rawServer((sock) => {
      if (++requests === 1) return void sock.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
      // The second request is received, worked on for a while, then the upstream dies.
      setTimeout(() => sock.terminate(), 400);
    });
    expect(await text((await post(s.url)).body)).toBe("ok");
    expect(await post(s.url).catch((e) => e)).toBeInstanceOf(ConnectionClosed);
    expect(requests).toBe(2);
    expect(s.connections()).toBe(1);
  });

  test("a request aborted before it starts neither takes nor opens a connection", async () => {
    const s = rawServer((sock) => void sock.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    expect(await text((await post(s.url)).body)).toBe("ok");
    const ctl = new AbortController();
    ctl.abort();
    expect(await post(s.url, "{}", ctl.signal).catch((e) => e)).toBeInstanceOf(ConnectionClosed);
    expect(idleConnections(new URL(s.url).origin)).toBe(1);
    expect(s.connections()).toBe(1);
  });

  test("a head sent a byte at a time is read", async () => {
    const head = `HTTP/1.1 200 OK\r\n${"x-pad: 0123456789\r\n".repeat(200)}content-length: 2\r\n\r\nok`;
    const s = rawServer(async (sock) => {
      for (const ch of head) {
        sock.write(ch);
        await Bun.sleep(0);
      }
    });
    const res = await post(s.url);
    expect(res.headers.get("x-pad")).toStartWith("0123456789, 0123456789");
    expect(await text(res.body)).toBe("ok");
  });

  test("a second read while one is pending is refused, not left hanging", async () => {
    const s = rawServer((sock) => void sock.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"));
    const res = await post(s.url);
    const first = res.body.read();
    expect(await res.body.read().catch((e) => e)).toBeInstanceOf(Error);
    await res.body.cancel();
    expect(await first.catch((e) => e)).toBeInstanceOf(ConnectionClosed);
  });

  test("a fresh connection dropped before any answer is not retried", async () => {
    const s = rawServer((sock) => void sock.terminate());
    expect(await post(s.url).catch((e) => e)).toBeInstanceOf(ConnectionClosed);
    expect(s.connections()).toBe(1);
  });

  test("bytes on an idle pooled connection close it", async () => {
    const s = rawServer((sock) => {
      sock.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
      setTimeout(() => sock.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nno"), 30);
    });
    expect(await text((await post(s.url)).body)).toBe("ok");
    await Bun.sleep(150);
    expect(idleConnections(new URL(s.url).origin)).toBe(0);
    expect(s.closed).toEqual([1]);
  });

  test("an unread body stalls the server's writes (backpressure); read later, every byte arrives intact", async () => {
    const total = 16 * 1024 * 1024;
    const pattern = (i: number) => (i * 7 + (i >> 12)) & 0xff;
    const payload = new Uint8Array(total);
    for (let i = 0; i < total; i++) payload[i] = pattern(i);
    let written = 0;
    let drained: () => void = () => {};
    const listener = Bun.listen<undefined>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(sock) {
          sock.write(`HTTP/1.1 200 OK\r\ncontent-length: ${total}\r\n\r\n`);
          const pump = () => {
            while (written < total) {
              const n = sock.write(payload.subarray(written, Math.min(total, written + 256 * 1024)));
              if (n <= 0) return;
              written += n;
            }
          };
          drained = pump;
          pump();
        },
        drain() {
          drained();
        },
      },
    });
    servers.push(listener);
    const res = await post(`http://127.0.0.1:${listener.port}/v1`);
    await Bun.sleep(500);
    const stalledAt = written;
    await Bun.sleep(300);
    // What the kernel's buffers hold, plus one queue: far short of the body.
    expect(written).toBe(stalledAt);
    expect(stalledAt).toBeLessThan(total / 2);
    let at = 0;
    let mismatches = 0;
    for (;;) {
      const r = await res.body.read();
      if (r.done) break;
      for (let j = 0; j < r.value.byteLength; j++) if (r.value[j] !== pattern(at + j)) mismatches++;
      at += r.value.byteLength;
    }
    expect(at).toBe(total);
    expect(mismatches).toBe(0);
  });

  test("the socket is read only while a read waits: a body handed out holds nothing more", async () => {
    const chunk = new Uint8Array(64 * 1024).fill(120);
    let sent = 0;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(c) {
              if (sent++ === 32) return c.close();
              c.enqueue(chunk.slice());
            },
          }),
        ),
    });
    servers.push(server);
    const res = await post(`http://127.0.0.1:${server.port}/v1`);
    const first = await res.body.read();
    expect(first.done).toBe(false);
    // The server has sent 2 MB; the reader asks for nothing more for a while.
    await Bun.sleep(300);
    const queue = (res.body as unknown as { queue: Uint8Array[] }).queue;
    expect(queue.length).toBe(0);
    let got = first.value!.byteLength;
    for (let r = await res.body.read(); !r.done && got < 32 * chunk.length; r = await res.body.read()) {
      got += r.value!.byteLength;
      // Each read brings at most one socket read: never a backlog behind it.
      expect(queue.length).toBe(0);
    }
    expect(got).toBe(32 * chunk.length);
  });

  test("a large request body is written whole (the socket's drain)", async () => {
    const body = JSON.stringify({ content: "x".repeat(8 * 1024 * 1024) });
    const s = rawServer((sock, req) => void sock.write(`HTTP/1.1 200 OK\r\ncontent-length: ${String(req.length).length}\r\n\r\n${req.length}`));
    const res = await post(s.url, body);
    const received = Number(await text(res.body));
    expect(received).toBeGreaterThan(body.length);
  });

  test("a reply sent before the request was taken whole leaves its connection out of the pool", async () => {
    let connections = 0;
    const listener = Bun.listen<{ answered: boolean }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(sock) {
          connections++;
          sock.data = { answered: false };
        },
        data(sock) {
          if (sock.data.answered) return;
          sock.data.answered = true;
          sock.write("HTTP/1.1 413 Payload Too Large\r\ncontent-length: 3\r\n\r\nbig");
        },
      },
    });
    servers.push(listener);
    const url = `http://127.0.0.1:${listener.port}/v1`;
    const res = await post(url, JSON.stringify({ content: "x".repeat(32 * 1024 * 1024) }));
    expect(res.status).toBe(413);
    expect(await text(res.body)).toBe("big");
    expect(idleConnections(new URL(url).origin)).toBe(0);
  });

  test("an abort mid-body fails the read and closes the connection", async () => {
    const s = rawServer((sock) => void sock.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n"));
    const ctl = new AbortController();
    const res = await post(s.url, "{}", ctl.signal);
    expect(await res.body.read()).toEqual({ done: false, value: expect.anything() });
    const pending = res.body.read();
    ctl.abort();
    expect(await pending.catch((e) => e)).toBeInstanceOf(ConnectionClosed);
    await Bun.sleep(50);
    expect(s.closed).toEqual([1]);
  });

  test("a cancelled body closes its connection; nothing more is read", async () => {
    const s = rawServer((sock) => void sock.write("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"));
    const res = await post(s.url);
    await res.body.cancel();
    expect(await res.body.read()).toEqual({ done: true });
    await Bun.sleep(50);
    expect(s.closed).toEqual([1]);
  });

  test("a refused connection is a ConnectError", async () => {
    const s = rawServer(() => {});
    const url = s.url;
    servers.pop()!.stop(true);
    expect(await post(url).catch((e) => e)).toBeInstanceOf(ConnectError);
  });

  test("a connection that does not open within the deadline is a ConnectError", async () => {
    // A TLS server that never answers the handshake: TCP connects, the connection never opens.
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    servers.push(silent);
    // Ends by the deadline rather than hanging: the test's own timeout would catch a hang.
    const err = await request1({
      target: targetOf(`https://127.0.0.1:${silent.port}/v1`),
      method: "POST",
      path: "/chat/completions",
      headers: {},
      body: "{}",
      signal: new AbortController().signal,
      connectTimeoutMs: 200,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as Error).message).toBe("no connection within 200 ms");
  });
});

describe("abortWith", () => {
  test.each([
    ["already aborted", true],
    ["aborted later", false],
  ])("%s: the controller follows the signal", (_name, early) => {
    const client = new AbortController();
    if (early) client.abort();
    const upstream = new AbortController();
    abortWith(client.signal, upstream);
    if (!early) {
      expect(upstream.signal.aborted).toBe(false);
      client.abort();
    }
    expect(upstream.signal.aborted).toBe(true);
  });
});
