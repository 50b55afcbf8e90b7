/**
 * A raw TCP upstream (Bun.listen): `answer` is called with each complete request (head and
 * content-length body) and writes exactly the bytes a test scripts — well-behaved, malformed or
 * hostile (late extra replies, oversized bodies). `stop()` closes it and its connections.
 */
import type { Socket, TCPSocketListener } from "bun";

export interface RawPeer {
  /** Request bytes received and not yet answered. */
  received: string;
  /** 1 for the first connection, 2 for the second, … */
  id: number;
}

export interface RawUpstream {
  /** The OpenAI-style base URL (…/v1). */
  url: string;
  connections(): number;
  /** Ids of the connections that closed, in order. */
  closed: number[];
  stop(): void;
}

export function rawUpstream(answer: (socket: Socket<RawPeer>, request: string, peer: RawPeer) => void): RawUpstream {
  let connections = 0;
  const closed: number[] = [];
  const listener: TCPSocketListener<RawPeer> = Bun.listen<RawPeer>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { received: "", id: ++connections };
      },
      data(s, d) {
        s.data.received += d.toString("latin1");
        for (;;) {
          const end = s.data.received.indexOf("\r\n\r\n");
          if (end < 0) return;
          const length = Number(/content-length: (\d+)/i.exec(s.data.received.slice(0, end))?.[1] ?? 0);
          if (s.data.received.length < end + 4 + length) return;
          const request = s.data.received.slice(0, end + 4 + length);
          s.data.received = s.data.received.slice(end + 4 + length);
          answer(s, request, s.data);
        }
      },
      close(s) {
        closed.push(s.data.id);
      },
    },
  });
  return { url: `http://127.0.0.1:${listener.port}/v1`, connections: () => connections, closed, stop: () => listener.stop(true) };
}

/** The JSON body of a raw request (its text after the head). */
export function requestJson(request: string): Record<string, any> {
  return JSON.parse(Buffer.from(request.slice(request.indexOf("\r\n\r\n") + 4), "latin1").toString("utf8"));
}

/** A complete keep-alive HTTP/1.1 reply carrying `body` as JSON. */
export function jsonReply(body: unknown, status = 200): string {
  const text = Buffer.from(JSON.stringify(body), "utf8").toString("latin1");
  return `HTTP/1.1 ${status} OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text, "latin1")}\r\n\r\n${text}`;
}

/** A well-formed non-streamed chat completion whose one message is `content`. */
export function chatCompletion(content: string) {
  return {
    id: "x",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 5, completion_tokens: 5 },
  };
}
