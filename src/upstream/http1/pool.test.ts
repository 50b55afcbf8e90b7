/**
 * The keep-alive pool: partitions (a connection serves one account only), the idle caps, replies
 * after which a connection is not reused, keep-alive off, and request headers refused before any
 * byte is written. Against raw TCP servers (test/support/raw-upstream.ts).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createPool, InvalidRequestHeader, request1, targetOf, type Request1 } from "./client";
import { ConnectionPool, KEEP_IDLE_MS, poolKey } from "./pool";
import type { Connection } from "./connection";
import { readAllText as text } from "./body";
import { rawUpstream, type RawUpstream } from "../../../test/support/raw-upstream";

const servers: RawUpstream[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop();
});
function server(answer: Parameters<typeof rawUpstream>[0]): RawUpstream {
  const s = rawUpstream(answer);
  servers.push(s);
  return s;
}
const OK = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

const post = (url: string, extra: Partial<Request1> = {}) =>
  request1({ target: targetOf(url), method: "POST", path: "/chat/completions", headers: { "content-type": "application/json" }, body: "{}", signal: new AbortController().signal, connectTimeoutMs: 2_000, ...extra });

describe("ConnectionPool", () => {
  const fake = (origin: string, partition: string, idleSince = Date.now()) =>
    ({ origin, key: poolKey(origin, partition), idleSince, closed: false }) as Connection;
  const poolOf = (maxIdlePerOrigin: number, maxIdle: number) => {
    const closed: Connection[] = [];
    const pool: ConnectionPool = new ConnectionPool((c) => {
      closed.push(c);
      c.closed = true;
      pool.remove(c);
    }, { maxIdlePerOrigin, maxIdle });
    return { pool, closed };
  };

  test("a connection is taken only by its own partition", () => {
    const { pool } = poolOf(8, 8);
    const a = fake("http://u", "acct_a");
    pool.put(a);
    expect(pool.take(poolKey("http://u", "acct_b"))).toBeNull();
    expect(pool.take(poolKey("http://u", ""))).toBeNull();
    expect(pool.take(poolKey("http://u", "acct_a"))).toBe(a);
    expect(pool.idle()).toBe(0);
  });

  test("past the per-origin cap the origin's oldest idle connection goes, whatever its partition", () => {
    const { pool, closed } = poolOf(2, 100);
    const [a, b, c] = [fake("http://u", "a"), fake("http://u", "b"), fake("http://u", "c")];
    const other = fake("http://v", "a");
    pool.put(other);
    pool.put(a);
    pool.put(b);
    pool.put(c);
    expect(closed).toEqual([a]);
    expect(pool.idle("http://u")).toBe(2);
    expect(pool.idle("http://v")).toBe(1);
  });

  test("past the total cap the oldest idle connection of any origin goes", () => {
    const { pool, closed } = poolOf(10, 2);
    const [a, b, c] = [fake("http://u", "a"), fake("http://v", "a"), fake("http://w", "a")];
    pool.put(a);
    pool.put(b);
    pool.put(c);
    expect(closed).toEqual([a]);
    expect(pool.idle()).toBe(2);
  });

  test("a cap of 0 keeps nothing; a connection idle past KEEP_IDLE_MS is not handed out", () => {
    const none = poolOf(0, 10);
    const a = fake("http://u", "a");
    none.pool.put(a);
    expect(none.closed).toEqual([a]);
    const { pool, closed } = poolOf(10, 10);
    const stale = fake("http://u", "a", Date.now() - KEEP_IDLE_MS - 1);
    pool.put(stale);
    expect(pool.take(poolKey("http://u", "a"))).toBeNull();
    expect(closed).toEqual([stale]);
  });
});

describe("request1 and the pool", () => {
  test("two partitions never share a connection; each reuses its own", async () => {
    const s = server((sock) => void sock.write(OK));
    const pool = createPool();
    const ids: number[] = [];
    for (const partition of ["a", "b", "a", "b"]) {
      expect(await text((await post(s.url, { pool, partition })).body)).toBe("ok");
      ids.push(s.connections());
    }
    expect(ids).toEqual([1, 2, 2, 2]);
    expect(pool.idle(new URL(s.url).origin)).toBe(2);
    pool.closeAll();
  });

  test.each([
    ["a 204", "HTTP/1.1 204 No Content\r\n\r\n", 204],
    ["a 304", "HTTP/1.1 304 Not Modified\r\n\r\n", 304],
    ["a zero-length 200", "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", 200],
  ])("after %s the connection is not reused: a body sent late reaches no later request", async (_name, first, status) => {
    let n = 0;
    const s = server((sock) => {
      // Later requests are worked on for a while, as an engine does: the late bytes come first.
      if (++n > 1) return void setTimeout(() => sock.write(OK), 60);
      sock.write(first);
      // A body the reply said it did not have, sent late (before the next request's answer).
      setTimeout(() => sock.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nXX"), 30);
    });
    const pool = createPool();
    const res = await post(s.url, { pool });
    expect(res.status).toBe(status);
    expect(await text(res.body)).toBe("");
    expect(pool.idle()).toBe(0);
    expect(await text((await post(s.url, { pool })).body)).toBe("ok");
    expect(s.connections()).toBe(2);
    pool.closeAll();
  });

  test("keep-alive off: `connection: close` is sent, each request gets its own connection, none is pooled", async () => {
    const seen: string[] = [];
    const s = server((sock, req) => {
      seen.push(req);
      sock.write(OK);
    });
    const pool = createPool();
    for (let i = 0; i < 3; i++) expect(await text((await post(s.url, { pool, keepAlive: false })).body)).toBe("ok");
    expect(s.connections()).toBe(3);
    expect(pool.idle()).toBe(0);
    expect(seen.every((r) => r.includes("\r\nconnection: close\r\n"))).toBe(true);
  });
});

describe("request headers are checked before anything is written", () => {
  test.each([
    ["a trailing LF", "Bearer sk-abc\n"],
    ["a CR LF and a smuggled header", "Bearer sk-abc\r\nx-evil: 1"],
    ["a NUL", "Bearer sk\u0000abc"],
    ["an escape", "Bearer sk\u001babc"],
    ["DEL", "Bearer sk\u007fabc"],
    ["a character past latin-1", "Bearer sk\u2028abc"],
  ])("a value with %s is refused, naming the header, not the value; no connection is made", async (_name, value) => {
    const s = server((sock) => void sock.write(OK));
    const err = await post(s.url, { headers: { authorization: value } }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRequestHeader);
    expect(err.message).toContain("authorization");
    expect(err.message).not.toContain("sk");
    expect(s.connections()).toBe(0);
  });

  test("a header name that is not a token is refused; a value with HTAB is sent", async () => {
    const seen: string[] = [];
    const s = server((sock, req) => {
      seen.push(req);
      sock.write(OK);
    });
    expect(await post(s.url, { headers: { "x-a\r\nb": "1" } }).catch((e) => e)).toBeInstanceOf(InvalidRequestHeader);
    expect(s.connections()).toBe(0);
    expect(await text((await post(s.url, { headers: { "x-tab": "a\tb" } })).body)).toBe("ok");
    expect(seen[0]).toContain("x-tab: a\tb\r\n");
  });
});
