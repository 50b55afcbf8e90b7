/**
 * Image inputs for chat: a `data:` URL is decoded with sharp, checked (format, byte size, pixel
 * count) and normalised before it is forwarded: orientation applied, the longest edge scaled down
 * to the configured maximum, metadata (EXIF, GPS) stripped, re-encoded as JPEG, or PNG when the
 * image has transparency. Every failure is an ImageRejected naming the rule; never a crash.
 */
import { loadSharp } from "./sharp";

export interface ImageLimits {
  maxBytes: number;
  maxPixels: number;
  maxEdge: number;
}

export const ACCEPTED_FORMATS = ["png", "jpeg", "webp", "gif"] as const;

export class ImageRejected extends Error {}

export interface NormalisedImage {
  dataUrl: string;
  width: number;
  height: number;
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),/i;

/** The decoded bytes of a base64 `data:` URL; the declared media type is not trusted. */
export function decodeDataUrl(url: string, maxBytes: number): Buffer {
  const m = DATA_URL.exec(url.slice(0, 256));
  if (!m) throw new ImageRejected("is not a valid data: URL (expected data:image/<format>;base64,<data>)");
  if (!/;base64$/i.test(m[2] ?? "")) throw new ImageRejected("must be base64-encoded (data:image/<format>;base64,<data>)");
  const payload = url.slice(m[0].length).replace(/\s+/g, "");
  // Check the size before decoding: base64 carries 3 bytes in every 4 characters.
  if (Math.floor((payload.length * 3) / 4) > maxBytes + 2) {
    throw new ImageRejected(`is larger than the limit of ${maxBytes} bytes`);
  }
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(payload)) throw new ImageRejected("is not valid base64");
  const bytes = Buffer.from(payload, "base64");
  if (bytes.length === 0) throw new ImageRejected("is empty");
  if (bytes.length > maxBytes) throw new ImageRejected(`is larger than the limit of ${maxBytes} bytes`);
  return bytes;
}

/**
 * `beforeDecode` hears the image's size once its header is read, before the pixels are decoded
 * (the request's total-pixel cap); an ImageRejected it throws stops the decode.
 */
export async function normaliseImage(bytes: Buffer, limits: ImageLimits, beforeDecode?: (width: number, height: number) => void): Promise<NormalisedImage> {
  const sharp = loadSharp();
  let meta: import("sharp").Metadata;
  try {
    // limitInputPixels makes libvips refuse decompression bombs before allocating them.
    meta = await sharp(bytes, { limitInputPixels: false, failOn: "error" }).metadata();
  } catch {
    throw new ImageRejected(`could not be decoded; accepted formats are ${ACCEPTED_FORMATS.join(", ")}`);
  }
  if (!meta.format || !(ACCEPTED_FORMATS as readonly string[]).includes(meta.format)) {
    throw new ImageRejected(`has format ${meta.format ?? "unknown"}; accepted formats are ${ACCEPTED_FORMATS.join(", ")}`);
  }
  const width = meta.width ?? 0;
  const height = meta.pageHeight ?? meta.height ?? 0;
  if (width <= 0 || height <= 0) throw new ImageRejected("has no pixels");
  if (width * height > limits.maxPixels) {
    throw new ImageRejected(`has ${width}x${height} pixels, more than the limit of ${limits.maxPixels} pixels`);
  }
  beforeDecode?.(width, height);
  try {
    const pipeline = sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: "error", animated: false })
      .autoOrient()
      .resize({ width: limits.maxEdge, height: limits.maxEdge, fit: "inside", withoutEnlargement: true });
    const alpha = meta.hasAlpha === true;
    const { data, info } = alpha
      ? await pipeline.png({ compressionLevel: 6 }).toBuffer({ resolveWithObject: true })
      : await pipeline.flatten({ background: "#ffffff" }).jpeg({ quality: 88, mozjpeg: false }).toBuffer({ resolveWithObject: true });
    return { dataUrl: `data:image/${alpha ? "png" : "jpeg"};base64,${data.toString("base64")}`, width: info.width, height: info.height };
  } catch {
    throw new ImageRejected("could not be decoded: the image data is corrupt or truncated");
  }
}
