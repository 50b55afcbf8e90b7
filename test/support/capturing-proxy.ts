/**
 * A recording pass-through in front of a real Switchyard: agent CLIs talk to it, it forwards each
 * request unchanged and relays the answer (streams included) unchanged, and keeps what the client
 * sent. Tests assert on the real request bodies (which tools Codex's default configuration
 * sends, where Claude Code puts system entries) and can save them as fixtures.
 */
import { serveLoopback } from "./loopback-server";

export interface CapturedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: any;
  /** The status and the headers Switchyard answered with. */
  status: number;
  responseHeaders: Record<string, string>;
  /** The whole answer as text once it ended (streams are copied as they pass, not delayed). */
  responseText: Promise<string>;
}

export interface CapturingProxy {
  /** Base address without /v1 (what ANTHROPIC_BASE_URL takes). */
  origin: string;
  captured: CapturedRequest[];
  stop(): void;
}

const HOP_BY_HOP = new Set(["host", "connection", "content-length", "transfer-encoding", "accept-encoding"]);

export function startCapturingProxy(targetOrigin: string): CapturingProxy {
  const captured: CapturedRequest[] = [];
  const { server, url } = serveLoopback({
    idleTimeout: 0,
    async fetch(req) {
      const u = new URL(req.url);
      const text = req.method === "GET" || req.method === "HEAD" ? "" : await req.text();
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => {
        if (!HOP_BY_HOP.has(k)) headers[k] = v;
      });
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        // Not JSON: kept as text.
      }
      const res = await fetch(targetOrigin + u.pathname + u.search, { method: req.method, headers, body: text || undefined });
      const responseHeaders: Record<string, string> = {};
      res.headers.forEach((v, k) => (responseHeaders[k] = v));
      const { authorization: _a, "x-api-key": _k, ...safe } = headers;
      const [toClient, toRecord] = res.body ? res.body.tee() : [null, null];
      const responseText = toRecord ? new Response(toRecord).text() : Promise.resolve("");
      captured.push({ method: req.method, path: u.pathname + u.search, headers: safe, body, status: res.status, responseHeaders, responseText });
      const out = new Headers(res.headers);
      out.delete("content-encoding");
      out.delete("content-length");
      return new Response(toClient, { status: res.status, headers: out });
    },
  });
  return { origin: url.replace(/\/v1$/, ""), captured, stop: () => server.stop(true) };
}
