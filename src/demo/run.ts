/**
 * `switchyard demo` (README "Try it"): in one command, with no network, no engine and no weights,
 * a working Switchyard on loopback: the echo engine as its chat upstream (sold at a default
 * price), the tiny demo models for speech and embeddings, a data directory, and an account with
 * credits and a key. It prints the base URL, the key and three curl commands that work, then runs
 * until SIGINT/SIGTERM, which stops everything and removes the temporary folder (not a --dir).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ConfigError, loadConfig } from "../config";
import { startServer, type RunningServer } from "../server";
import { Admin } from "../accounts/admin";
import { DEMO_MODEL, startEchoEngine, type EchoEngine } from "./echo-engine";
import { DEMO_VOICE, writeDemoModels } from "./models";

/** The demo's price for the echo model, USD per million input,output tokens. */
export const DEMO_PRICE = "1,2";
/** The demo account's opening credits, USD. */
export const DEMO_CREDITS = "5";
const DEFAULT_PORT = "8080";

/** Its options as the command line gave them (`--port N`, `--dir DIR`; the parser refuses a bare one). */
export interface DemoFlags {
  dir?: string;
  port?: string;
}

function fail(message: string): number {
  process.stderr.write(`switchyard demo: ${message}\n`);
  return 2;
}

/** The three copy-paste requests, for a person reading the terminal. */
export function demoInstructions(base: string, key: string, dir: string, kept: boolean): string {
  const auth = `-H "Authorization: Bearer ${key}" -H "Content-Type: application/json"`;
  return `Switchyard demo is running (echo engine and tiny demo models: no network, no weights).

  Base URL   ${base}/v1
  API key    ${key}   (demo account with $${DEMO_CREDITS} of credits)
  Dashboard  ${base}/dashboard   (sign in with the key)
  Folder     ${dir}${kept ? "" : "   (removed on exit)"}

Chat (the echo engine answers with your last message; see usage.cost):
  curl -s ${base}/v1/chat/completions ${auth} -d '{"model":"${DEMO_MODEL}","messages":[{"role":"user","content":"Hello, Switchyard!"}]}'

Speech (the demo voice model speaks a tone, written to speech.mp3):
  curl -s ${base}/v1/audio/speech ${auth} -d '{"model":"voice-82m","voice":"${DEMO_VOICE}","input":"Hello, Switchyard!"}' -o speech.mp3

Embeddings (the demo embedding model's vectors mean nothing; the shapes and billing are real):
  curl -s ${base}/v1/embeddings ${auth} -d '{"model":"embedding-300m","input":"Hello, Switchyard!"}'

Press Ctrl-C to stop.
`;
}

/** Runs the demo until a signal; returns an exit status only when it cannot start. */
export async function runDemo(flags: DemoFlags): Promise<number> {
  const port = flags.port ?? DEFAULT_PORT;
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return fail("--port must be a whole number from 0 to 65535 (0 picks a free port)");
  const kept = flags.dir !== undefined;
  const dir = flags.dir !== undefined ? resolve(flags.dir) : mkdtempSync(join(tmpdir(), "switchyard-demo-"));
  let echo: EchoEngine | null = null;
  let server: RunningServer | null = null;
  const cleanUp = async () => {
    await server?.stop().catch(() => {});
    echo?.stop();
    if (!kept) rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(dir, { recursive: true });
    const modelsDir = join(dir, "models");
    await writeDemoModels(modelsDir);
    echo = startEchoEngine();
    // A clean environment: the demo never reaches a database, upstream or folder of the caller's.
    const config = loadConfig({
      PORT: port,
      HOST: "127.0.0.1",
      SWITCHYARD_DATA_DIR: join(dir, "data"),
      SWITCHYARD_MODELS_DIR: modelsDir,
      SWITCHYARD_UPSTREAM_URL: echo.url,
      SWITCHYARD_DEFAULT_PRICE: DEMO_PRICE,
      SWITCHYARD_ONNX_PROVIDER: "cpu",
      // Ctrl-C gives requests in flight a moment, not the 30 s a production server waits.
      SWITCHYARD_SHUTDOWN_GRACE_SECONDS: "2",
      SWITCHYARD_LOG_LEVEL: process.env.SWITCHYARD_LOG_LEVEL ?? "warn",
    });
    server = await startServer(config);
    const admin = new Admin(server.services);
    const account = await admin.createAccount({ name: "demo", credits: DEMO_CREDITS });
    const { key } = await admin.createKey(account.id, { name: "demo" });
    process.stdout.write(demoInstructions(server.url, key, dir, kept));
  } catch (e) {
    await cleanUp();
    if (e instanceof ConfigError && e.variable === "PORT") return fail(`port ${port} is in use on 127.0.0.1: pass --port N (0 picks a free port)`);
    return fail(String((e as Error)?.message ?? e));
  }
  const running = server;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    await running.shutdown(signal);
    echo?.stop();
    if (!kept) rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  return await new Promise<number>(() => {});
}
