/**
 * `switchyard demo` (README "Try it") run as a user runs it: `bun src/main.ts demo` in a process,
 * from another directory, with no network, engine or weights. The printed curl commands are
 * replayed as printed; SIGTERM stops everything with exit 0 and removes the temporary folder.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { replay, spawnDemo, type DemoProcess } from "./support/demo-process";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const cmd = (...args: string[]) => [process.execPath, MAIN, "demo", ...args];

describe("switchyard demo", () => {
  let cwd: string;
  let demo: DemoProcess;

  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), "switchyard-demo-cwd-"));
    // A caller's settings never reach the demo (it would otherwise try this database and upstream).
    demo = await spawnDemo(cmd("--port", "0"), cwd, { SWITCHYARD_DATABASE_URL: "postgres://nowhere.invalid/x", SWITCHYARD_UPSTREAM_URL: "http://nowhere.invalid/v1" });
  });
  afterAll(() => {
    demo?.proc.kill("SIGKILL");
    rmSync(cwd, { recursive: true, force: true });
  });

  test("prints the base URL, a key and three curl commands", () => {
    expect(demo.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(demo.key).toMatch(/^sy-/);
    expect(demo.requests.map((r) => r.kind).sort()).toEqual(["chat", "embeddings", "speech"]);
    expect(existsSync(join(demo.folder, "models", "voice-82m", "onnx", "model.onnx"))).toBe(true);
  });

  test("the printed chat command is answered by the echo engine and charged", async () => {
    const res = await replay(demo, "chat");
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.model).toBe("demo-echo");
    expect(body.choices[0].message.content).toBe("Hello, Switchyard!");
    expect(body.usage.completion_tokens).toBeGreaterThan(0);
    expect(body.usage.cost).toBeGreaterThan(0);
  });

  test("a streamed chat echoes too", async () => {
    const res = await fetch(demo.baseUrl + "/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${demo.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo-echo", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "one two three" }] }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text()).split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)));
    expect(events.map((e) => e.choices[0]?.delta?.content ?? "").join("")).toBe("one two three");
    expect(events.at(-1).usage.cost).toBeGreaterThan(0);
  });

  test("the printed speech command returns MP3 audio", async () => {
    const res = await replay(demo, "speech");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.length).toBeGreaterThan(0);
    // An MPEG audio frame starts with an 11-bit sync word (or an ID3 tag comes first).
    const framed = (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0) || new TextDecoder().decode(bytes.slice(0, 3)) === "ID3";
    expect(framed).toBe(true);
  });

  test("the printed embeddings command returns a vector", async () => {
    const res = await replay(demo, "embeddings");
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.data).toHaveLength(1);
    expect(body.data[0].embedding.length).toBeGreaterThan(0);
    expect(body.data[0].embedding.every((x: unknown) => typeof x === "number")).toBe(true);
  });

  test("GET /v1/models lists the echo model, speech and embeddings", async () => {
    const res = await fetch(demo.baseUrl + "/models", { headers: { authorization: `Bearer ${demo.key}` } });
    const ids = ((await res.json()) as any).data.map((m: { id: string }) => m.id);
    expect(ids).toEqual(expect.arrayContaining(["demo-echo", "voice-82m", "embedding-300m"]));
  });

  test("SIGTERM stops it with exit 0 and removes the temporary folder", async () => {
    demo.proc.kill("SIGTERM");
    expect(await demo.proc.exited).toBe(0);
    expect(existsSync(demo.folder)).toBe(false);
  });
});

describe("switchyard demo options", () => {
  test("--dir keeps its folder after SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-demo-dir-"));
    const demo = await spawnDemo(cmd("--port", "0", "--dir", dir), dir);
    try {
      expect(demo.folder).toBe(dir);
      expect((await replay(demo, "chat")).status).toBe(200);
      demo.proc.kill("SIGTERM");
      expect(await demo.proc.exited).toBe(0);
      expect(existsSync(join(dir, "data"))).toBe(true);
      expect(existsSync(join(dir, "models", "embedding-300m", "tokenizer.json"))).toBe(true);
    } finally {
      demo.proc.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a port in use exits 2 saying to pass --port, and leaves no temporary folder", () => {
    const busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const tmp = mkdtempSync(join(tmpdir(), "switchyard-demo-tmp-"));
    try {
      const r = Bun.spawnSync(cmd("--port", String(busy.port)), { cwd: tmp, env: { PATH: process.env.PATH ?? "", TMPDIR: tmp }, stderr: "pipe" });
      expect(r.exitCode).toBe(2);
      expect(r.stderr.toString()).toContain(`port ${busy.port} is in use on 127.0.0.1: pass --port N`);
      expect(readdirSync(tmp)).toEqual([]);
    } finally {
      busy.stop(true);
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  test("a bad --port or a --dir without a folder exits 2 naming the flag", () => {
    const cwd = mkdtempSync(join(tmpdir(), "switchyard-demo-bad-"));
    try {
      const port = Bun.spawnSync(cmd("--port", "http"), { cwd, stderr: "pipe" });
      expect(port.exitCode).toBe(2);
      expect(port.stderr.toString()).toContain("--port must be a whole number");
      const dir = Bun.spawnSync(cmd("--dir"), { cwd, stderr: "pipe" });
      expect(dir.exitCode).toBe(2);
      expect(dir.stderr.toString()).toContain("--dir needs a value");
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
