/**
 * Which forward proxy an upstream is reached through, from HTTP_PROXY / HTTPS_PROXY / NO_PROXY
 * (and their lower-case forms, which win, as in curl and most tools). Pure: environment in,
 * a proxy (or none) out, or a ProxyConfigError naming the variable and the rule (never the
 * proxy's password).
 *
 * - An `http://` upstream goes through HTTP_PROXY: requests are sent to the proxy in absolute
 *   form. An `https://` upstream goes through HTTPS_PROXY: a CONNECT tunnel, then TLS to the
 *   upstream itself (the proxy sees only the host name and port).
 * - The proxy itself is spoken to in plain HTTP (`http://host:port`); a user name and password in
 *   its URL are sent as `Proxy-Authorization: Basic`.
 * - NO_PROXY: comma- or space-separated host names (a name also matches its subdomains; a leading
 *   `.` or `*.` is allowed), IP addresses, CIDR blocks, any of them with `:port`, or `*` for all.
 */
import { inCidr, parseCidr, parseIp, type Cidr } from "../net/ip";
import type { ProxySpec } from "./http1/target";

export type { ProxySpec };

export class ProxyConfigError extends Error {
  constructor(readonly variable: string, rule: string) {
    super(`${variable}: ${rule}`);
  }
}

type Env = Record<string, string | undefined>;

interface NoProxyRule {
  host: string | null;
  block: Cidr | null;
  port: number | null;
}

export interface ProxySettings {
  http: ProxySpec | null;
  https: ProxySpec | null;
  noProxy: NoProxyRule[] | "all";
}

function variable(env: Env, name: string): { name: string; value: string } | null {
  for (const n of [name.toLowerCase(), name.toUpperCase()]) {
    const v = env[n]?.trim();
    if (v) return { name: n, value: v };
  }
  return null;
}

function parseProxyUrl(name: string, raw: string): ProxySpec {
  // A bare host:port is what many set-ups write; it means http://host:port.
  let u: URL;
  try {
    u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`);
  } catch {
    throw new ProxyConfigError(name, "must be a proxy URL such as http://proxy.internal:3128");
  }
  if (u.protocol !== "http:") throw new ProxyConfigError(name, `must be an http:// proxy URL (the proxy is spoken to in plain HTTP; ${u.protocol}// is not supported)`);
  if (!u.hostname) throw new ProxyConfigError(name, "must name the proxy's host");
  if ((u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "") {
    throw new ProxyConfigError(name, "must be only scheme, host and port (and optionally user:password@)");
  }
  const authorization =
    u.username !== "" || u.password !== ""
      ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64")}`
      : null;
  const hostname = u.hostname.replace(/^\[|\]$/g, "");
  const port = Number(u.port || 80);
  return { hostname, port, authorization, origin: `http://${u.host}` };
}

function parseNoProxy(name: string, raw: string): NoProxyRule[] | "all" {
  const rules: NoProxyRule[] = [];
  for (let entry of raw.split(/[\s,]+/).filter(Boolean)) {
    if (entry === "*") return "all";
    let port: number | null = null;
    const portMatch = /^(.*[^:]):(\d+)$/.exec(entry);
    // An IPv6 address has colons of its own: only [addr]:port or a name/IPv4 with :port carry one.
    if (portMatch && (!portMatch[1]!.includes(":") || portMatch[1]!.startsWith("["))) {
      entry = portMatch[1]!;
      port = Number(portMatch[2]);
    }
    entry = entry.replace(/^\[|\]$/g, "").replace(/^\*?\./, "").toLowerCase();
    const [addr, bits] = entry.split("/");
    if (parseIp(addr!) !== null) {
      const block = parseCidr(entry);
      if (block === null) throw new ProxyConfigError(name, `"${entry}" is not a valid CIDR block`);
      rules.push({ host: null, block, port });
    } else if (entry !== "" && bits === undefined) rules.push({ host: entry, block: null, port });
    else if (entry !== "") throw new ProxyConfigError(name, `"${entry}" is not a valid CIDR block`);
  }
  return rules;
}

/** Reads and checks the proxy variables once (start-up): a bad one stops it, naming the variable. */
export function proxySettings(env: Env): ProxySettings {
  const http = variable(env, "http_proxy");
  const https = variable(env, "https_proxy");
  const noProxy = variable(env, "no_proxy");
  return {
    http: http ? parseProxyUrl(http.name, http.value) : null,
    https: https ? parseProxyUrl(https.name, https.value) : null,
    noProxy: noProxy ? parseNoProxy(noProxy.name, noProxy.value) : [],
  };
}

function bypassed(rules: NoProxyRule[] | "all", hostname: string, port: number): boolean {
  if (rules === "all") return true;
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const ip = parseIp(host);
  return rules.some((r) => {
    if (r.port !== null && r.port !== port) return false;
    if (r.block) return ip !== null && inCidr(ip, r.block);
    return host === r.host || host.endsWith(`.${r.host}`);
  });
}

/** The proxy a request to this base URL goes through, or null (no proxy set, or NO_PROXY). */
export function proxyFor(settings: ProxySettings, baseUrl: string): ProxySpec | null {
  const u = new URL(baseUrl);
  const tls = u.protocol === "https:";
  const proxy = tls ? settings.https : settings.http;
  if (proxy === null) return null;
  return bypassed(settings.noProxy, u.hostname, Number(u.port || (tls ? 443 : 80))) ? null : proxy;
}
