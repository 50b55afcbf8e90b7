/** Pieces the fake upstreams share: a server on a free loopback port, SSE framing, and a sleep. */
import type { Server } from "bun";

export const enc = new TextEncoder();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One SSE event carrying `data` as JSON. */
export const sseFrame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
export const SSE_DONE = "data: [DONE]\n\n";

export function sseResponse(body: BodyInit): Response {
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

export interface LoopbackOptions {
  fetch(req: Request): Response | Promise<Response>;
  /** Seconds; 0 keeps slow streams open (Bun's default closes idle connections after 10 s). */
  idleTimeout?: number;
}

/** Serves on a free 127.0.0.1 port; `url` is the OpenAI-style base URL (…/v1). */
export function serveLoopback(options: LoopbackOptions): { server: Server<undefined>; url: string } {
  const server: Server<undefined> = Bun.serve({ port: 0, hostname: "127.0.0.1", ...options });
  return { server, url: `http://127.0.0.1:${server.port}/v1` };
}
