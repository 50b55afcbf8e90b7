/**
 * Image inputs end to end, with real images made in the test by sharp: `data:` images reach the
 * upstream normalised (downscaled, re-encoded, metadata stripped), remote URLs on private hosts refused; a
 * text-only model answers 400 naming the part; corrupt, oversized or unsupported images are 400
 * before anything is held or sent.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, okStream, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat, sseEvents } from "./support/chat-client";
import { ledgerState, settled } from "./support/ledger-state";
import { loadSharp } from "../src/images/sharp";

const VISION = "qwen3-vl-235b-a22b";
const TEXT_ONLY = "glm-4.6";
const sharp = loadSharp();

let up: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  up = startScripted((b) => (b.stream ? okStream(b) : okJson(b, "I see it")));
  h = await startHarness({
    SWITCHYARD_UPSTREAM_URL: up.url,
    SWITCHYARD_IMAGE_MAX_EDGE: "1024",
    SWITCHYARD_IMAGE_MAX_PIXELS: "9000000",
    SWITCHYARD_IMAGE_MAX_BYTES: "2000000",
  });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  up.stop();
});
beforeEach(() => {
  up.requests.length = 0;
});

async function pngDataUrl(width: number, height: number, alpha = false): Promise<string> {
  const buf = await sharp({ create: { width, height, channels: alpha ? 4 : 3, background: { r: 10, g: 120, b: 240, alpha: alpha ? 0.4 : 1 } } })
    .png()
    .withExif({ IFD0: { Artist: "exif-secret-artist" } })
    .toBuffer();
  return `data:image/png;base64,${buf.toString("base64")}`;
}

const withImage = (url: string, model = VISION, extra: Record<string, unknown> = {}) => ({
  model,
  ...extra,
  messages: [
    { role: "system", content: "You describe images." },
    { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url, detail: "high" } }] },
  ],
});

async function forwardedImage(): Promise<{ url: string; detail: unknown; meta: import("sharp").Metadata; bytes: Buffer }> {
  const part = up.requests.at(-1)!.messages[1].content[1];
  const url: string = part.image_url.url;
  const bytes = Buffer.from(url.slice(url.indexOf(",") + 1), "base64");
  return { url, detail: part.image_url.detail, meta: await sharp(bytes).metadata(), bytes };
}

describe("a model that accepts images", () => {
  for (const stream of [false, true]) {
    test(`a large opaque PNG is downscaled to the maximum edge and re-encoded as JPEG (stream: ${stream})`, async () => {
      const res = await postChat(h.base, acct.key, withImage(await pngDataUrl(3000, 1500), VISION, { stream }));
      expect(res.status).toBe(200);
      if (stream) expect((await sseEvents(res)).at(-1)).toBe("[DONE]");
      const img = await forwardedImage();
      expect(img.url.startsWith("data:image/jpeg;base64,")).toBe(true);
      expect(img.meta.format).toBe("jpeg");
      expect([img.meta.width, img.meta.height]).toEqual([1024, 512]);
      expect(img.detail).toBe("high"); // the part's other fields pass through
      expect(img.meta.exif).toBeUndefined();
      expect(img.bytes.toString("latin1")).not.toContain("exif-secret-artist");
      expect(up.requests.at(-1)!.messages[1].content[0]).toEqual({ type: "text", text: "What is this?" });
    });
  }

  test("a small PNG with transparency stays PNG at its own size", async () => {
    const res = await postChat(h.base, acct.key, withImage(await pngDataUrl(64, 32, true)));
    expect(res.status).toBe(200);
    const img = await forwardedImage();
    expect(img.meta.format).toBe("png");
    expect([img.meta.width, img.meta.height]).toEqual([64, 32]);
  });

  test("a remote image URL on a non-public host → 400 naming the part; nothing fetched or sent (remote-media.test.ts has the rest)", async () => {
    const res = await postChat(h.base, acct.key, withImage("http://127.0.0.1:9/cat.png?size=large"));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.param).toBe("messages[1].content[1]");
    expect(body.error.message).toContain("only from public addresses");
    expect(up.requests.length).toBe(0);
  });

  const bad: [string, () => Promise<string>, string][] = [
    ["corrupt image bytes", async () => `data:image/png;base64,${Buffer.from("this is not a png at all, just text").toString("base64")}`, "could not be decoded"],
    ["a truncated PNG", async () => (await pngDataUrl(400, 400)).slice(0, 120), "could not be decoded"],
    ["too many pixels", () => pngDataUrl(4000, 3000), "more than the limit of 9000000 pixels"],
    ["too many bytes", async () => `data:image/png;base64,${"A".repeat(3_000_000)}`, "larger than the limit of 2000000 bytes"],
    ["an unsupported format (tiff)", async () => `data:image/tiff;base64,${(await sharp({ create: { width: 8, height: 8, channels: 3, background: "#fff" } }).tiff().toBuffer()).toString("base64")}`, "format tiff"],
    ["a data URL that is not base64", async () => "data:image/png,rawbytes", "base64"],
  ];
  test.each(bad)("%s → 400 naming messages[1].content[1]; nothing sent, nothing held", async (_name, make, rule) => {
    const before = ledgerState(h, acct.id);
    const res = await postChat(h.base, acct.key, withImage(await make()));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.param).toBe("messages[1].content[1]");
    expect(body.error.message).toContain(rule);
    expect(up.requests.length).toBe(0);
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
    expect(after.entries).toBe(before.entries);
  });
});

describe("a model without image input", () => {
  test.each([
    ["a data: image", () => pngDataUrl(16, 16)],
    ["a remote image", async () => "https://images.example.com/cat.png"],
  ])("%s → 400 naming the message and part", async (_name, make) => {
    for (const stream of [false, true]) {
      const res = await postChat(h.base, acct.key, withImage(await make(), TEXT_ONLY, { stream }));
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.param).toBe("messages[1].content[1]");
      expect(body.error.message).toContain("does not accept image input");
    }
    expect(up.requests.length).toBe(0);
  });

  test("text parts alone are fine", async () => {
    const res = await postChat(h.base, acct.key, { model: TEXT_ONLY, messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] });
    expect(res.status).toBe(200);
  });
});
