/**
 * Where the upstream HTTP/1.1 client sends requests (client.ts): an upstream's base URL parsed once,
 * with the forward proxy and the TLS material its connections use. Requests that would open the
 * same connection share a pool key (`origin`).
 */

/** A forward proxy, as the client speaks to it (which one an upstream uses: upstream/proxy.ts). */
export interface ProxySpec {
  hostname: string;
  port: number;
  /** `Basic …` when the proxy URL carried credentials. A secret: never logged. */
  authorization: string | null;
  /** For the pool's key: the proxy's address, without credentials. */
  origin: string;
}

/** Where requests go, parsed once per base URL. */
export interface Target {
  /** The pool's key. */
  origin: string;
  hostname: string;
  /** Connect to this address instead of resolving `hostname` (TLS still verifies `hostname`). */
  address?: string;
  port: number;
  tls: boolean;
  /** The Host header. */
  host: string;
  /** The base URL's path without a trailing slash (requests append theirs). */
  basePath: string;
  /** The forward proxy in between, if any. */
  proxy: ProxySpec | null;
  /** A route's own CA bundle and client certificate (PEM); null: the bundled CAs, no client certificate. */
  tlsOptions: TlsOptions | null;
}

/** PEM texts, read from the files a route names. */
export interface TlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
}

export function targetOf(baseUrl: string, via: { proxy?: ProxySpec | null; tlsOptions?: TlsOptions | null } = {}): Target {
  const u = new URL(baseUrl);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`unsupported scheme ${u.protocol}`);
  const tls = u.protocol === "https:";
  const proxy = via.proxy ?? null;
  const tlsOptions = tls ? (via.tlsOptions ?? null) : null;
  // Connections are shared only between requests that would open the same one.
  let origin = u.origin;
  if (proxy) origin += ` via ${proxy.origin}`;
  if (tlsOptions) origin += ` tls ${Bun.hash(`${tlsOptions.ca ?? ""}\0${tlsOptions.cert ?? ""}`).toString(36)}`;
  return {
    origin,
    hostname: u.hostname.replace(/^\[|\]$/g, ""),
    port: Number(u.port || (tls ? 443 : 80)),
    tls,
    host: u.host,
    basePath: u.pathname.replace(/\/+$/, ""),
    proxy,
    tlsOptions,
  };
}
