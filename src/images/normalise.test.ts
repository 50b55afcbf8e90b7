import { describe, expect, test } from "bun:test";
import { decodeDataUrl, ImageRejected, normaliseImage } from "./normalise";
import { loadSharp } from "./sharp";

const sharp = loadSharp();
const LIMITS = { maxBytes: 1_000_000, maxPixels: 4_000_000, maxEdge: 512 };

async function make(width: number, height: number, format: "png" | "jpeg" | "webp" | "gif" | "tiff", alpha = false): Promise<Buffer> {
  const img = sharp({ create: { width, height, channels: alpha ? 4 : 3, background: { r: 200, g: 30, b: 60, alpha: alpha ? 0.5 : 1 } } });
  return img.toFormat(format).toBuffer();
}

const dataUrl = (b: Buffer, mime = "image/png") => `data:${mime};base64,${b.toString("base64")}`;

describe("decodeDataUrl", () => {
  test.each([
    ["not a data URL", "https://example.com/a.png", /not a valid data: URL/],
    ["not base64", "data:image/png,rawbytes", /base64/],
    ["bad base64 characters", "data:image/png;base64,@@@@", /not valid base64/],
    ["empty", "data:image/png;base64,", /empty/],
    ["too large (checked before decoding)", "data:image/png;base64," + "A".repeat(2_000_000), /larger than the limit/],
  ])("%s → rejected", (_name, url, message) => {
    expect(() => decodeDataUrl(url, LIMITS.maxBytes)).toThrow(ImageRejected);
    expect(() => decodeDataUrl(url, LIMITS.maxBytes)).toThrow(message);
  });

  test("decodes base64 (whitespace tolerated)", () => {
    expect(decodeDataUrl("data:image/png;base64,aGVs\nbG8=", 100).toString()).toBe("hello");
  });
});

describe("normaliseImage", () => {
  test.each([
    // [source, expected output format, expected size]
    ["png 2000x1000 opaque", () => make(2000, 1000, "png"), "jpeg", [512, 256]],
    ["png 300x600 with alpha", () => make(300, 600, "png", true), "png", [256, 512]],
    ["png 200x100 with alpha", () => make(200, 100, "png", true), "png", [200, 100]],
    ["jpeg 1024x1024", () => make(1024, 1024, "jpeg"), "jpeg", [512, 512]],
    ["webp 100x50", () => make(100, 50, "webp"), "jpeg", [100, 50]],
    ["gif 600x200 (palette transparency kept: png)", () => make(600, 200, "gif"), "png", [512, 171]],
  ] as [string, () => Promise<Buffer>, string, [number, number]][])("%s → %s, downscaled to fit, never enlarged", async (_name, src, format, [w, h]) => {
    const out = await normaliseImage(await src(), LIMITS);
    expect(out.dataUrl.startsWith(`data:image/${format};base64,`)).toBe(true);
    const meta = await sharp(Buffer.from(out.dataUrl.split(",")[1]!, "base64")).metadata();
    expect(meta.format).toBe(format as "png" | "jpeg");
    expect([meta.width, meta.height]).toEqual([w, h]);
    expect([out.width, out.height]).toEqual([w, h]);
  });

  test("EXIF orientation is applied and metadata stripped", async () => {
    const src = await sharp({ create: { width: 40, height: 20, channels: 3, background: "#00ff00" } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .withExif({ IFD0: { Copyright: "private-gps-owner" } })
      .toBuffer();
    const out = await normaliseImage(src, LIMITS);
    const bytes = Buffer.from(out.dataUrl.split(",")[1]!, "base64");
    const meta = await sharp(bytes).metadata();
    expect([meta.width, meta.height]).toEqual([20, 40]);
    expect(meta.exif).toBeUndefined();
    expect(bytes.toString("latin1")).not.toContain("private-gps-owner");
  });

  test.each([
    ["an unsupported format (tiff)", () => make(10, 10, "tiff"), /format tiff/],
    ["random bytes", async () => Buffer.from("definitely not an image at all"), /could not be decoded/],
    ["a truncated png", async () => (await make(200, 200, "png")).subarray(0, 60), /could not be decoded|corrupt/],
    ["too many pixels", () => make(2001, 2000, "png"), /more than the limit/],
  ] as [string, () => Promise<Buffer>, RegExp][])("%s → ImageRejected, no crash", async (_name, src, message) => {
    const err = await normaliseImage(await src(), LIMITS).catch((e) => e);
    expect(err).toBeInstanceOf(ImageRejected);
    expect(String(err.message)).toMatch(message);
  });
});
