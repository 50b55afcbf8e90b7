/**
 * Media work per request is bounded and counted against the account: too many media parts or too
 * many pixels in one request is a 400 naming the limit and the part before anything is decoded,
 * held or sent; an account that used its decode time gets 429 (another account does not).
 * The decode queue's fairness between accounts is shown in src/images/decode-queue.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat } from "./support/chat-client";
import { ledgerState, settled } from "./support/ledger-state";
import { loadSharp } from "../src/images/sharp";

const VISION = "qwen3-vl-235b-a22b";
const sharp = loadSharp();

async function png(width: number, height: number): Promise<string> {
  const buf = await sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } }).png().toBuffer();
  return `data:image/png;base64,${buf.toString("base64")}`;
}

const image = (url: string) => ({ type: "image_url", image_url: { url } });
const audio = { type: "input_audio", input_audio: { data: Buffer.from("RIFF....WAVE").toString("base64"), format: "wav" } };
const chat = (parts: unknown[]) => ({
  model: VISION,
  messages: [
    { role: "system", content: "Look." },
    { role: "user", content: [{ type: "text", text: "What are these?" }, ...parts] },
  ],
});

let up: ScriptedUpstream;
beforeAll(() => {
  up = startScripted((b) => okJson(b, "seen"));
});
afterAll(() => up.stop());
beforeEach(() => {
  up.requests.length = 0;
});

describe("per request: media parts and total pixels", () => {
  let h: Harness;
  let acct: { id: string; key: string };
  beforeAll(async () => {
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: up.url, SWITCHYARD_MEDIA_MAX_PARTS: "3", SWITCHYARD_IMAGE_MAX_TOTAL_PIXELS: "1000000" });
    acct = await h.account(10);
  });
  afterAll(() => h.stop());

  async function refused(body: Record<string, unknown>, param: string, words: string[]) {
    const before = ledgerState(h, acct.id);
    const res = await postChat(h.base, acct.key, body);
    expect(res.status).toBe(400);
    const err = (await res.json()).error;
    expect(err.type).toBe("invalid_request_error");
    expect(err.param).toBe(param);
    for (const w of words) expect(err.message).toContain(w);
    expect(up.requests.length).toBe(0);
    const after = await settled(h, acct.id);
    expect([after.balance, after.entries]).toEqual([before.balance, before.entries]);
    return err;
  }

  test("three small images (the limit) and 0.75 MP in all pass", async () => {
    const small = await png(500, 500);
    const res = await postChat(h.base, acct.key, chat([image(small), image(small), image(small)]));
    expect(res.status).toBe(200);
    expect(up.requests.length).toBe(1);
  });

  test("a fourth media part → 400 naming the limit and that part, before any image is decoded", async () => {
    const tiny = await png(8, 8);
    const err = await refused(chat([image(tiny), image(tiny), image(tiny), image(tiny)]), "messages[1].content[4]", ["at most 3 image, audio and video parts", "limit per request"]);
    expect(err.code).toBe("too_many_media_parts");
  });

  test("audio parts count too", async () => {
    const tiny = await png(8, 8);
    await refused(chat([image(tiny), audio, audio, image(tiny)]), "messages[1].content[4]", ["at most 3"]);
  });

  test("200 parts (the issue's request) are refused at the fourth, not decoded", async () => {
    const tiny = await png(8, 8);
    await refused(chat(Array.from({ length: 200 }, () => image(tiny))), "messages[1].content[4]", ["at most 3"]);
  });

  test("images that are each within the per-image limit but together over the request's pixels → 400 naming the part that crossed it", async () => {
    const each = await png(600, 600); // 360,000 pixels; the third brings the request to 1,080,000
    await refused(chat([image(each), image(each), image(each)]), "messages[1].content[3]", ["1080000 pixels", "limit of 1000000 pixels per request"]);
  });
});

describe("per account: image decoding time", () => {
  let h: Harness;
  beforeAll(async () => {
    // 1 ms of decoding per minute: any real decode uses it up, and it comes back at 1 ms a minute.
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: up.url, SWITCHYARD_IMAGE_DECODE_MS_PER_MINUTE: "1" });
  });
  afterAll(() => h.stop());

  test("an account past its decode time gets 429 with Retry-After, nothing held or sent; another account still decodes", async () => {
    const a = await h.account(10);
    const b = await h.account(10);
    const big = await png(1500, 1500);
    expect((await postChat(h.base, a.key, chat([image(big)]))).status).toBe(200);
    expect(up.requests.length).toBe(1);

    const before = ledgerState(h, a.id);
    const res = await postChat(h.base, a.key, chat([image(big)]));
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const err = (await res.json()).error;
    expect(err.code).toBe("image_decode_limit_exceeded");
    expect(err.message).toContain("1 ms per minute");
    expect(up.requests.length).toBe(1);
    const after = await settled(h, a.id);
    expect([after.balance, after.entries]).toEqual([before.balance, before.entries]);

    // Text needs no decoding: the account is not shut out of chat.
    expect((await postChat(h.base, a.key, chat([]))).status).toBe(200);
    expect((await postChat(h.base, b.key, chat([image(big)]))).status).toBe(200);
  });
});
