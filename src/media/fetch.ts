/**
 * Fetches a client's remote media URL for the gateway itself (docs/chat.md, "Remote media"), so an engine
 * never fetches URLs from inside the operator's network. The host is resolved once; every address
 * it resolves to must be public (or in SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS), and the connection
 * goes to exactly the checked address (no second lookup, so no DNS rebinding). Redirects are not
 * followed; the body is capped in bytes and the whole fetch in time. Every refusal is a
 * MediaRefused whose message is safe to show the client: it never names a resolved address.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { request1, type Target } from "../upstream/http1/client";
import { mayConnect, parseIp, type Cidr } from "./address";

export class MediaRefused extends Error {}
/** The body was larger than the fetch's byte cap. */
export class MediaTooLarge extends MediaRefused {}

/** The addresses a host name resolves to (all of them, A and AAAA). */
export type Lookup = (hostname: string) => Promise<string[]>;

const systemLookup: Lookup = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

export interface FetchedMedia {
  bytes: Buffer;
  /** The response's media type, lower case, without parameters ("" when absent). */
  contentType: string;
}

export interface RemoteMediaOptions {
  allow: readonly Cidr[];
  timeoutMs: number;
  /** The system resolver unless given (tests resolve their own names to 127.0.0.1). */
  lookup?: Lookup;
}

export class RemoteMediaFetcher {
  private readonly lookup: Lookup;

  constructor(private readonly options: RemoteMediaOptions) {
    this.lookup = options.lookup ?? systemLookup;
  }

  /** The bytes at `url`, at most `maxBytes` of them; `signal` ends the fetch (the caller's deadline). */
  async fetch(url: string, maxBytes: number, signal: AbortSignal): Promise<FetchedMedia> {
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]);
    const target = await this.target(url, deadline);
    const u = new URL(url);
    let response;
    try {
      response = await request1({
        target,
        method: "GET",
        path: u.pathname + u.search,
        headers: { accept: "image/*, audio/*, video/*", "user-agent": "Switchyard-media-fetcher" },
        body: "",
        signal: deadline,
        connectTimeoutMs: this.options.timeoutMs,
      });
    } catch {
      throw this.failure(deadline, "could not be fetched: no answer from its server");
    }
    const { status, headers, body } = response;
    if (status < 200 || status > 299) {
      await body.cancel().catch(() => {});
      if (status >= 300 && status < 400) throw new MediaRefused(`was not fetched: its server answered with a redirect (${status}), and redirects are not followed`);
      throw new MediaRefused(`could not be fetched: its server answered ${status}`);
    }
    const declared = headers.get("content-length");
    if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
      await body.cancel().catch(() => {});
      throw new MediaTooLarge(`is larger than the limit of ${maxBytes} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    try {
      for (;;) {
        const r = await body.read();
        if (r.done) break;
        total += r.value.byteLength;
        if (total > maxBytes) {
          await body.cancel().catch(() => {});
          throw new MediaTooLarge(`is larger than the limit of ${maxBytes} bytes`);
        }
        chunks.push(r.value);
      }
    } catch (err) {
      if (err instanceof MediaRefused) throw err;
      throw this.failure(deadline, "could not be fetched: the transfer broke off");
    }
    const contentType = (headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    return { bytes: Buffer.concat(chunks, total), contentType };
  }

  /** Where to connect: the URL checked, its host resolved once, every address allowed. */
  private async target(url: string, deadline: AbortSignal): Promise<Target> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new MediaRefused("is not a valid URL");
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new MediaRefused("must be a data: URL or an http(s) URL");
    if (u.username !== "" || u.password !== "") throw new MediaRefused("must not carry a user name or password");
    const hostname = u.hostname.replace(/^\[|\]$/g, "");
    let addresses: string[];
    if (parseIp(hostname)) addresses = [hostname];
    else {
      try {
        addresses = await abortable(this.lookup(hostname), deadline);
      } catch {
        if (deadline.aborted) throw this.failure(deadline, "");
        throw new MediaRefused("could not be fetched: its host name does not resolve");
      }
    }
    if (addresses.length === 0) throw new MediaRefused("could not be fetched: its host name does not resolve");
    for (const a of addresses) {
      const ip = parseIp(a);
      if (!ip || !mayConnect(ip, this.options.allow)) {
        throw new MediaRefused("was not fetched: its host is not a public internet address, and remote media is fetched only from public addresses");
      }
    }
    const tls = u.protocol === "https:";
    const port = Number(u.port || (tls ? 443 : 80));
    const address = addresses[0]!;
    return {
      // Pooled per checked address: a kept-alive connection never outlives the check that made it.
      origin: `media ${address} ${u.origin}`,
      hostname,
      address,
      port,
      tls,
      // Straight to the checked address: never through a forward proxy, which would resolve the name again.
      proxy: null,
      tlsOptions: null,
      host: u.host,
      basePath: "",
    };
  }

  /** What a failed step means: out of time (ours or the caller's deadline), the caller gone, or `message`. */
  private failure(deadline: AbortSignal, message: string): Error {
    if (!deadline.aborted) return new MediaRefused(message);
    const reason: unknown = deadline.reason;
    if (reason instanceof DOMException && reason.name === "TimeoutError") return new MediaRefused(`was not fetched within the time allowed (${this.options.timeoutMs} ms)`);
    return reason instanceof Error ? reason : new Error("aborted");
  }
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener("abort", onAbort), resolve(v)),
      (e) => (signal.removeEventListener("abort", onAbort), reject(e)),
    );
  });
}
