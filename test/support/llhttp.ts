/**
 * llhttp, the HTTP/1.1 parser of Node.js and undici, as a reference for the upstream client's own
 * parser (src/upstream/http1/differential.test.ts): the WebAssembly build the undici package ships
 * (a devDependency, used by no product code), driven the way undici's client drives it, in its
 * default, strict mode. It parses one response the way the upstream client reads one: interim
 * (1xx) responses are skipped, and parsing stops once the first final response is complete.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** A response both sides can describe: its status, header fields in order, and body bytes. */
export type Verdict =
  | { ok: true; status: number; headers: [string, string][]; body: Uint8Array }
  /** `afterHead`: the final response's head had been read whole (the fault is in its body or trailers). */
  | { ok: false; reason: string; afterHead?: boolean };

interface Message {
  status: number;
  headers: [string, string][];
  body: Uint8Array[];
  /** Fields seen after the head: trailers of a chunked body. */
  inTrailers: boolean;
  complete: boolean;
}

/** HPE_PAUSED: a callback returning it stops llhttp_execute there. */
const PAUSED = 21;
const latin1 = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");

class Llhttp {
  private readonly exports: {
    memory: WebAssembly.Memory;
    llhttp_alloc(type: number): number;
    llhttp_free(parser: number): void;
    llhttp_execute(parser: number, data: number, length: number): number;
    llhttp_finish(parser: number): number;
    llhttp_get_error_reason(parser: number): number;
    malloc(bytes: number): number;
    free(pointer: number): void;
  };
  /** The messages of the response being parsed (interim ones first). */
  private messages: Message[] = [];
  /** The field whose value is being read; a new name starts once a value was seen. */
  private field: [string, string] | null = null;
  private sawValue = false;

  constructor() {
    const wasm = require("undici/lib/llhttp/llhttp-wasm.js") as Uint8Array<ArrayBuffer>;
    const bytes = (at: number, length: number) => new Uint8Array(this.exports.memory.buffer, at, length).slice();
    const current = () => this.messages[this.messages.length - 1]!;
    const onField = (name: string) => {
      const m = current();
      if (this.field === null || this.sawValue) {
        this.field = [name, ""];
        if (!m.inTrailers) m.headers.push(this.field);
        this.sawValue = false;
      } else this.field[0] += name;
      return 0;
    };
    const instance = new WebAssembly.Instance(new WebAssembly.Module(wasm), {
      env: {
        wasm_on_url: () => 0,
        wasm_on_status: () => 0,
        wasm_on_message_begin: () => {
          this.messages.push({ status: 0, headers: [], body: [], inTrailers: false, complete: false });
          this.field = null;
          return 0;
        },
        wasm_on_header_field: (_p: number, at: number, length: number) => onField(latin1(bytes(at, length))),
        wasm_on_header_value: (_p: number, at: number, length: number) => {
          if (this.field !== null) this.field[1] += latin1(bytes(at, length));
          this.sawValue = true;
          return 0;
        },
        wasm_on_headers_complete: (_p: number, status: number) => {
          const m = current();
          m.status = status;
          m.inTrailers = true;
          this.field = null;
          return 0;
        },
        wasm_on_body: (_p: number, at: number, length: number) => {
          current().body.push(bytes(at, length));
          return 0;
        },
        wasm_on_message_complete: () => {
          const m = current();
          m.complete = true;
          // The upstream client reads no further than the final response.
          return m.status >= 200 ? PAUSED : 0;
        },
      },
    });
    this.exports = instance.exports as unknown as Llhttp["exports"];
  }

  parse(response: Uint8Array): Verdict {
    const x = this.exports;
    this.messages = [];
    this.field = null;
    const parser = x.llhttp_alloc(2 /* RESPONSE */);
    const data = x.malloc(Math.max(1, response.byteLength));
    try {
      new Uint8Array(x.memory.buffer, data, response.byteLength).set(response);
      let code = x.llhttp_execute(parser, data, response.byteLength);
      // All of it read and nothing wrong: the connection closes (a close-delimited body ends here).
      if (code === 0) code = x.llhttp_finish(parser);
      const final = this.messages.find((m) => m.status >= 200 && m.complete);
      if (final) {
        const body = Buffer.concat(final.body);
        return { ok: true, status: final.status, headers: final.headers, body: new Uint8Array(body) };
      }
      const afterHead = this.messages.some((m) => m.status >= 200);
      if (code === 0) return { ok: false, reason: "incomplete", afterHead };
      const reason = x.llhttp_get_error_reason(parser);
      const text = reason === 0 ? `error ${code}` : latin1(new Uint8Array(x.memory.buffer, reason, new Uint8Array(x.memory.buffer, reason).indexOf(0)));
      return { ok: false, reason: text, afterHead };
    } finally {
      x.free(data);
      x.llhttp_free(parser);
    }
  }
}

let shared: Llhttp | null = null;

/** llhttp's verdict on `response`, the bytes an upstream sent before closing the connection. */
export function llhttpVerdict(response: Uint8Array): Verdict {
  shared ??= new Llhttp();
  return shared.parse(response);
}
