/** The setup the speech tests share: a harness serving the tiny Kokoro-signature model from a fresh temp dir, and a speech POST. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "./harness";
import { writeTinyKokoro } from "./tiny-kokoro";

export interface SpeechStack {
  h: Harness;
  modelsDir: string;
}

/** `dirPrefix` names the temp models dir; `kokoro` shapes the tiny model; `env` adds settings. */
export async function startSpeechStack(dirPrefix: string, kokoro: Parameters<typeof writeTinyKokoro>[1] = {}, env: Record<string, string> = {}): Promise<SpeechStack> {
  const modelsDir = mkdtempSync(join(tmpdir(), dirPrefix));
  writeTinyKokoro(modelsDir, kokoro);
  const h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir, ...env });
  return { h, modelsDir };
}

export async function stopSpeechStack(h: Harness, modelsDir: string): Promise<void> {
  await h.stop();
  rmSync(modelsDir, { recursive: true, force: true });
}

/** POST /v1/audio/speech with a bearer key and `body` sent as JSON exactly as given. */
export function postSpeech(base: string, key: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(base + "/v1/audio/speech", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}
