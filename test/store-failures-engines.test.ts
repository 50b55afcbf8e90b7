/**
 * The local engines under a store that cannot write (issue: embeddings answered 500 with internal
 * text, speech reset the connection mid-body): embeddings are refused with 503 before the model
 * runs; a speech stream whose charge cannot be written still ends as a complete body, unbilled,
 * with its hold voided. And any unexpected error is a generic 500 carrying the request id.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { startHarness, type Harness } from "./support/harness";
import { tempModelsDir } from "./support/embedding-fixture";
import { writeTinyKokoro } from "./support/tiny-kokoro";
import { postSpeech } from "./support/speech-stack";
import { post } from "./support/gateway-client";
import { ledgerState, settled } from "./support/ledger-state";
import { fillDisk } from "./support/disk";
import type { EmbeddingEngine } from "../src/engines/embeddings/engine";

let h: Harness;
let modelsDir: string;
let acct: { id: string; key: string };

beforeAll(async () => {
  modelsDir = tempModelsDir();
  writeTinyKokoro(modelsDir, {});
  h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  rmSync(modelsDir, { recursive: true, force: true });
});

const db = () => h.db;
const settleProbe = () => Bun.sleep(550);

describe("embeddings", () => {
  test("a full disk: 503 service_unavailable with Retry-After, nothing billed", async () => {
    const before = ledgerState(h, acct.id);
    const disk = fillDisk(db());
    try {
      const res = await post(h, "/v1/embeddings", acct.key, { model: "embedding-300m", input: "hello" });
      const body = (await res.json()) as any;
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).not.toBeNull();
      expect(body.error.code).toBe("service_unavailable");
      expect(JSON.stringify(body)).not.toMatch(/SQLITE|pending hold|disk/);
    } finally {
      disk.restore();
    }
    expect(ledgerState(h, acct.id)).toEqual(before);
    await settleProbe();
  });

  test("an unexpected engine error is a generic 500 with the request id and no internal text; nothing billed", async () => {
    const engine = h.server.services.engines.get<EmbeddingEngine>("embedding-300m")!;
    const original = engine.embedEncoded;
    engine.embedEncoded = async () => {
      throw new TypeError("cannot read tensor at /srv/secret/model.onnx (internal)");
    };
    try {
      const before = ledgerState(h, acct.id);
      const res = await post(h, "/v1/embeddings", acct.key, { model: "embedding-300m", input: "hello" });
      const body = (await res.json()) as any;
      expect(res.status).toBe(500);
      expect(body.error).toEqual({
        message: `The server had an error while processing your request (request id ${res.headers.get("x-request-id")}).`,
        type: "api_error",
        param: null,
        code: "internal_error",
      });
      expect(ledgerState(h, acct.id)).toEqual(before);
    } finally {
      engine.embedEncoded = original;
    }
  });
});

describe("speech", () => {
  const input = "The first sentence is spoken. A second one follows it. And a third ends the text.";

  test("a charge that cannot be written: the audio still ends as a complete body, unbilled, its hold voided", async () => {
    const before = ledgerState(h, acct.id);
    // Charges cannot be written; holds and voids still can.
    const disk = fillDisk(db(), ["ledger_entries"]);
    try {
      const res = await postSpeech(h.base, acct.key, { model: "voice-82m", voice: "af_heart", input, response_format: "wav" });
      expect(res.status).toBe(200);
      const body = await res.arrayBuffer();
      expect(body.byteLength).toBeGreaterThan(44);
    } finally {
      disk.restore();
    }
    expect(await settled(h, acct.id)).toEqual(before);
    await settleProbe();
  });

  test("a full disk: the charge that finds it is not billed, then speech is refused with 503 before any synthesis", async () => {
    const before = ledgerState(h, acct.id);
    const disk = fillDisk(db());
    try {
      // Holds are not written (they live in memory): the first request meets the disk at its charge.
      const first = await postSpeech(h.base, acct.key, { model: "voice-82m", voice: "af_heart", input, response_format: "wav" });
      await first.arrayBuffer();
      expect(ledgerState(h, acct.id)).toEqual(before);
      const res = await postSpeech(h.base, acct.key, { model: "voice-82m", voice: "af_heart", input });
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error.code).toBe("service_unavailable");
    } finally {
      disk.restore();
    }
    expect(ledgerState(h, acct.id)).toEqual(before);
    await settleProbe();
  });
});
