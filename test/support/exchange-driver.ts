/**
 * The upstream client's response handling (src/upstream/http1/exchange.ts, the real one) fed
 * bytes without a socket: a stand-in connection takes the place of Bun's, so that any response,
 * cut into any pieces, is read exactly as the client reads one off the network, in process and
 * deterministically. For the differential test against llhttp (test/support/llhttp.ts).
 */
import { Exchange } from "../../src/upstream/http1/exchange";
import { createPool } from "../../src/upstream/http1/client";
import type { Connection } from "../../src/upstream/http1/connection";
import type { Verdict } from "./llhttp";

/**
 * What the client makes of `response` arriving in `pieces` (cut at the given offsets), then the
 * connection closing: the final response's status, headers and body, or a refusal.
 */
export async function exchangeVerdict(response: Uint8Array, cuts: number[] = []): Promise<Verdict> {
  const socket = { pause() {}, resume() {}, terminate() {}, write: (bytes: Uint8Array) => bytes.byteLength };
  const conn = {
    socket,
    origin: "http://upstream",
    key: "http://upstream",
    pool: createPool({ maxIdle: 0, maxIdlePerOrigin: 0 }),
    exchange: null,
    served: 0,
    idleSince: 0,
    closed: false,
    unsent: null,
    connecting: null,
    tls: false,
    tunnel: null,
  } as unknown as Connection;
  const exchange = new Exchange(conn, new AbortController().signal, true);
  let from = 0;
  for (const at of [...cuts.filter((c) => c > 0 && c < response.byteLength).sort((a, b) => a - b), response.byteLength]) {
    // Each socket read is a buffer of its own; bytes after the exchange let go of the connection
    // go to no one (on a real one they close it).
    if (conn.exchange === exchange && at > from) exchange.onData(response.slice(from, at));
    from = at;
  }
  if (conn.exchange === exchange) exchange.onClose();
  try {
    const res = await exchange.response;
    const body: Uint8Array[] = [];
    for (let r = await res.body.read(); !r.done; r = await res.body.read()) body.push(r.value.slice());
    return { ok: true, status: res.status, headers: [...res.headers], body: new Uint8Array(Buffer.concat(body)) };
  } catch (err) {
    return { ok: false, reason: `${(err as Error).constructor.name}: ${(err as Error).message}` };
  }
}
