/**
 * Scripted fake upstreams for routing tests: each is a real loopback HTTP server whose every
 * reply a test decides (a status, a JSON body, an SSE script with pauses, a stall), recording
 * what it received and how many streams the gateway abandoned. Several run at once; plus a URL
 * that refuses connections and a routes-file helper.
 */
import { writeFileSync } from "node:fs";
import { enc, serveLoopback, sleep, sseFrame, sseResponse, SSE_DONE } from "./loopback-server";

export type Step = { data: unknown } | { raw: string } | { pause: number } | { stall: true } | { drop: true };

export type Reply =
  | { status: number; json: unknown; delayMs?: number }
  | { sse: Step[]; delayMs?: number }
  /** Headers never come. */
  | { hang: true };

export interface ScriptedUpstream {
  url: string;
  requests: Record<string, any>[];
  /** Streams the gateway cancelled before they finished. */
  aborted: number;
  /** Replies by default with `reply(body, n)` where n counts this upstream's requests from 0. */
  script(reply: (body: Record<string, any>, n: number) => Reply): void;
  stop(): void;
}

export function okJson(body: Record<string, any>, text = "ok", usage = { prompt_tokens: 10, completion_tokens: 2 }): Reply {
  return {
    status: 200,
    json: {
      id: "chatcmpl-secret-upstream", object: "chat.completion", created: 1_700_000_000, model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

export function chunk(body: Record<string, any>, delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) {
  return { data: { id: "chatcmpl-secret-upstream", object: "chat.completion.chunk", created: 1_700_000_000, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra } };
}

/** A complete, well-formed stream of `words`, with usage and [DONE]. */
export function okStream(body: Record<string, any>, words: string[] = ["Hel", "lo"], pauseMs = 0): Reply {
  const steps: Step[] = [chunk(body, { role: "assistant", content: "" })];
  for (const w of words) {
    if (pauseMs) steps.push({ pause: pauseMs });
    steps.push(chunk(body, { content: w }));
  }
  steps.push(chunk(body, {}, "stop"));
  steps.push({ data: { id: "x", object: "chat.completion.chunk", created: 1, model: body.model, choices: [], usage: { prompt_tokens: 10, completion_tokens: words.length, total_tokens: 10 + words.length } } });
  steps.push({ raw: SSE_DONE });
  return { sse: steps };
}

export function startScripted(reply: (body: Record<string, any>, n: number) => Reply = (b) => (b.stream ? okStream(b) : okJson(b))): ScriptedUpstream {
  let script = reply;
  const state: ScriptedUpstream = {
    url: "",
    requests: [],
    aborted: 0,
    script(r) {
      script = r;
    },
    stop() {
      server.stop(true);
    },
  };
  const { server, url } = serveLoopback({
    idleTimeout: 0,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = (await req.json()) as Record<string, any>;
      const n = state.requests.length;
      state.requests.push(body);
      const r = script(body, n);
      if ("hang" in r) {
        await new Promise<void>((resolve) => req.signal.addEventListener("abort", () => resolve()));
        state.aborted++;
        return new Response(null, { status: 599 });
      }
      if (r.delayMs) await sleep(r.delayMs);
      if ("json" in r) return Response.json(r.json, { status: r.status });
      let cancelled = false;
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          try {
            for (const step of r.sse) {
              if (cancelled) return;
              if ("pause" in step) await sleep(step.pause);
              else if ("stall" in step) return await new Promise<void>(() => {});
              else if ("drop" in step) return controller.error(new Error("dropped"));
              else controller.enqueue(enc.encode("raw" in step ? step.raw : sseFrame(step.data)));
            }
            controller.close();
          } catch {
            // The gateway went away.
          }
        },
        cancel() {
          cancelled = true;
          state.aborted++;
        },
      });
      return sseResponse(stream);
    },
  });
  state.url = url;
  return state;
}

/** A loopback URL nobody listens on: connections are refused. */
export function refusedUrl(): string {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port;
  s.stop(true);
  return `http://127.0.0.1:${port}/v1`;
}

/** Writes a routes document; returns its path. */
export function writeRoutes(path: string, doc: unknown): string {
  writeFileSync(path, JSON.stringify(doc, null, 2));
  return path;
}

/**
 * A loopback address whose connections never complete: a socket that listens with a backlog of
 * one and never accepts; once one connection fills the queue, the kernel drops further SYNs and
 * connects hang, as with a firewalled host. Bun has no backlog option, hence libc via FFI.
 */
export async function blackhole(): Promise<{ url: string; close(): void }> {
  const { dlopen, FFIType, ptr } = await import("bun:ffi");
  const libc = dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  });
  const fd = libc.symbols.socket(2 /* AF_INET */, 1 /* SOCK_STREAM */, 0);
  const addr = new Uint8Array(16);
  new DataView(addr.buffer).setUint16(0, 2, true);
  addr.set([127, 0, 0, 1], 4);
  if (fd < 0 || libc.symbols.bind(fd, ptr(addr), 16) !== 0 || libc.symbols.listen(fd, 0) !== 0) throw new Error("blackhole: socket setup failed");
  libc.symbols.getsockname(fd, ptr(addr), ptr(new Uint32Array([16])));
  const port = (addr[2]! << 8) | addr[3]!;
  const filler = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {}, error() {}, connectError() {} } });
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close() {
      filler.end();
      libc.symbols.close(fd);
      libc.close();
    },
  };
}
