/**
 * A forward proxy for tests, on raw sockets: plain-HTTP requests in absolute form are forwarded
 * to the named origin, CONNECT opens a tunnel. It records each request line and the
 * Proxy-Authorization it was sent, and can refuse with a status.
 */
import type { Socket } from "bun";

export interface ProxySeen {
  line: string;
  authorization: string | null;
}

export interface ForwardProxy {
  url: string;
  seen: ProxySeen[];
  /** Answer every request with this status instead of forwarding (e.g. 407). */
  refuseWith: number | null;
  stop(): void;
}

interface State {
  head: string;
  upstream: Socket<unknown> | null;
  pending: Uint8Array[];
}

export function startForwardProxy(): ForwardProxy {
  const proxy: ForwardProxy = { url: "", seen: [], refuseWith: null, stop: () => server.stop(true) };
  const server = Bun.listen<State>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { head: "", upstream: null, pending: [] };
      },
      async data(s, chunk) {
        const st = s.data;
        if (st.upstream) return void st.upstream.write(chunk);
        if (st.head.includes("\r\n\r\n")) return void st.pending.push(chunk);
        st.head += Buffer.from(chunk).toString("latin1");
        const end = st.head.indexOf("\r\n\r\n");
        if (end < 0) return;
        const lines = st.head.slice(0, end).split("\r\n");
        const auth = lines.find((l) => /^proxy-authorization:/i.test(l));
        proxy.seen.push({ line: lines[0]!, authorization: auth ? auth.slice(auth.indexOf(":") + 1).trim() : null });
        if (proxy.refuseWith !== null) {
          s.write(`HTTP/1.1 ${proxy.refuseWith} Refused\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
          return void s.end();
        }
        const [method, target] = lines[0]!.split(" ");
        const connectTo = method === "CONNECT" ? new URL(`http://${target}`) : new URL(target!);
        const rest = Buffer.from(st.head.slice(end + 4), "latin1");
        // Forwarded requests go on as they came (origin servers accept the absolute form).
        const first = method === "CONNECT" ? rest : Buffer.from(st.head, "latin1");
        st.upstream = await Bun.connect({
          hostname: connectTo.hostname === "localhost" ? "127.0.0.1" : connectTo.hostname,
          port: Number(connectTo.port || 80),
          socket: { data: (_u, d) => void s.write(d), close: () => void s.end(), error: () => void s.end() },
        });
        if (method === "CONNECT") s.write("HTTP/1.1 200 Connection established\r\n\r\n");
        if (first.byteLength > 0) st.upstream.write(first);
        for (const p of st.pending.splice(0)) st.upstream.write(p);
      },
      close(s) {
        s.data.upstream?.end();
      },
    },
  });
  proxy.url = `http://127.0.0.1:${server.port}`;
  return proxy;
}
