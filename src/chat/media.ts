/**
 * Media parts of a chat request, before anything is held or sent (docs/chat.md, "Images" and "Remote
 * media"). /v1/messages and /v1/responses images arrive here as `image_url` parts.
 *
 * - Counted first: more than SWITCHYARD_MEDIA_MAX_PARTS image, audio and video parts is a 400
 *   naming the first part over the limit; an image sent to a model without image input is a 400.
 * - `image_url` and `input_image`: a `data:` URL is decoded, checked and normalised
 *   (src/images/normalise.ts) in the fair decode queue, on the account's decode-time budget, and
 *   all of a request's images together stay under SWITCHYARD_IMAGE_MAX_TOTAL_PIXELS. An http(s)
 *   URL is fetched by the gateway (src/media/fetch.ts) and then treated as a `data:` URL, or
 *   refused, or passed through, as SWITCHYARD_REMOTE_MEDIA says. Other schemes: 400.
 * - `audio_url` and `video_url`: a `data:` URL passes; an http(s) URL is fetched (the reply must
 *   be audio/…, video/… or application/octet-stream) and passed on as a `data:` URL, or refused,
 *   or passed through. `input_audio` carries base64 inline: its shape is checked, nothing fetched.
 * - A part without a type that carries a media field is refused (engines guess its type).
 * - `image` parts are only checked against the model's modalities; other types pass as they are.
 */
import type { ModelEntry } from "../catalog/catalog";
import type { Config } from "../config";
import { clientGone, DomainError, invalidField } from "../errors";
import type { DecodeQueue } from "../images/decode-queue";
import { decodeDataUrl, ImageRejected, normaliseImage, type ImageLimits } from "../images/normalise";
import { MediaRefused, MediaTooLarge, type RemoteMediaFetcher } from "../media/fetch";

const IMAGE_TYPES = new Set(["image_url", "input_image", "image"]);
const AV_TYPES = new Set(["audio_url", "video_url", "input_audio"]);
const MEDIA_FIELDS = ["image_url", "audio_url", "video_url", "input_audio"];

type Part = Record<string, unknown> & { type?: unknown };
type Message = { content?: unknown };

export interface MediaContext {
  config: Pick<
    Config,
    "imageMaxBytes" | "imageMaxPixels" | "imageMaxEdge" | "mediaMaxParts" | "imageMaxTotalPixels" | "remoteMedia" | "remoteMediaMaxBytes" | "remoteMediaTimeoutMs"
  >;
  decoder: DecodeQueue;
  fetcher: RemoteMediaFetcher;
  accountId: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** The URL of a part's media field: `{ url }` or a bare string. */
function urlOf(part: Part, field: string): string | null {
  const v = part[field];
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as { url?: unknown }).url === "string") return (v as { url: string }).url;
  return null;
}

function withUrl(part: Part, field: string, url: string): Part {
  const v = part[field];
  return { ...part, [field]: typeof v === "string" ? url : { ...(v as object), url } };
}

const isData = (url: string) => /^data:/i.test(url);
const isRemote = (url: string) => /^https?:\/\//i.test(url);

/** One request's media work: the pixel total so far, and one deadline for all its fetches. */
class RequestMedia {
  private pixels = 0;
  /** Bytes fetched so far: all of a request's fetches share SWITCHYARD_REMOTE_MEDIA_MAX_BYTES. */
  private fetched = 0;
  private deadline: AbortSignal | null = null;

  constructor(
    private readonly ctx: MediaContext,
    private readonly entry: ModelEntry,
  ) {}

  /** Pass one, before any work: types, modalities and the count. */
  check(messages: Message[]): void {
    let count = 0;
    const max = this.ctx.config.mediaMaxParts;
    eachPart(messages, (part, param) => {
      if (typeof part.type !== "string") {
        const field = MEDIA_FIELDS.find((f) => f in part);
        if (field) throw invalidField(`${param}.type`, `a part carrying '${field}' must say its type ("type": "${field}")`);
        return;
      }
      const image = IMAGE_TYPES.has(part.type);
      if (!image && !AV_TYPES.has(part.type)) return;
      if (image && !this.entry.inputModalities.includes("image")) {
        throw new DomainError("invalid_request", "image_input_not_supported", `Invalid '${param}': the model '${this.entry.id}' does not accept image input; send text only, or use a model whose input_modalities include "image".`, param);
      }
      if (++count > max) {
        throw new DomainError("invalid_request", "too_many_media_parts", `Invalid '${param}': a request may carry at most ${max} image, audio and video parts (the limit per request); this is part ${count}.`, param);
      }
    });
  }

  /** Pass two: the part as it goes to the engine (the same object when unchanged). */
  async prepare(part: Part, param: string): Promise<Part> {
    switch (part.type) {
      case "image_url":
      case "input_image":
        return this.image(part, param, "image_url");
      case "audio_url":
      case "video_url":
        return this.audioVideo(part, param, part.type);
      case "input_audio": {
        const a = part.input_audio as { data?: unknown; format?: unknown } | null;
        if (!a || typeof a !== "object" || typeof a.data !== "string" || a.data === "") throw invalidField(`${param}.input_audio.data`, "must be a base64 string");
        if (typeof a.format !== "string") throw invalidField(`${param}.input_audio.format`, 'must be a string ("wav", "mp3")');
        return part;
      }
      default:
        return part;
    }
  }

  /** `image_url` carries `{ url }` (chat) or a bare URL string (`input_image`, Responses style). */
  private async image(part: Part, param: string, field: string): Promise<Part> {
    const url = urlOf(part, field);
    if (url === null) throw invalidField(`${param}.${field}`, part.type === "image_url" ? "must be an object with a 'url' string" : "must be a URL string");
    let bytes: Buffer;
    const { config } = this.ctx;
    try {
      if (isData(url)) bytes = decodeDataUrl(url, config.imageMaxBytes);
      else if (!isRemote(url)) throw new ImageRejected("URL must be a data: URL or an http(s) URL");
      else {
        if (config.remoteMedia === "passthrough") return part;
        bytes = (await this.fetch(url, config.imageMaxBytes, param)).bytes;
      }
      const limits: ImageLimits = { maxBytes: config.imageMaxBytes, maxPixels: config.imageMaxPixels, maxEdge: config.imageMaxEdge };
      const image = await this.ctx.decoder.run(this.ctx.accountId, () => {
        if (this.ctx.signal.aborted) throw clientGone();
        return normaliseImage(bytes, limits, (w, h) => this.countPixels(w, h));
      });
      return withUrl(part, field, image.dataUrl);
    } catch (err) {
      if (err instanceof ImageRejected) throw new DomainError("invalid_request", "invalid_image", `Invalid '${param}': the image ${err.message}.`, param);
      throw err;
    }
  }

  private countPixels(width: number, height: number): void {
    this.pixels += width * height;
    const max = this.ctx.config.imageMaxTotalPixels;
    if (this.pixels > max) throw new ImageRejected(`brings the request's images to ${this.pixels} pixels, more than the limit of ${max} pixels per request`);
  }

  private async audioVideo(part: Part, param: string, field: "audio_url" | "video_url"): Promise<Part> {
    const url = urlOf(part, field);
    if (url === null) throw invalidField(`${param}.${field}`, "must be an object with a 'url' string");
    if (isData(url)) return part;
    if (!isRemote(url)) throw invalidField(`${param}.${field}.url`, "must be a data: URL or an http(s) URL");
    if (this.ctx.config.remoteMedia === "passthrough") return part;
    const kind = field === "audio_url" ? "audio" : "video";
    const media = await this.fetch(url, Infinity, param);
    const type = media.contentType;
    if (!type.startsWith(`${kind}/`) && type !== "application/octet-stream") {
      throw new DomainError("invalid_request", "invalid_media", `Invalid '${param}': the URL answered with content type '${type || "none"}', not ${kind}.`, param);
    }
    return withUrl(part, field, `data:${type};base64,${media.bytes.toString("base64")}`);
  }

  /** Fetches `url`, at most `kindMax` bytes and what is left of the request's fetch allowance. */
  private async fetch(url: string, kindMax: number, param: string) {
    const { config } = this.ctx;
    if (config.remoteMedia === "refuse") {
      throw new DomainError("invalid_request", "remote_media_refused", `Invalid '${param}': remote media URLs are not accepted here; send the media inline as a data: URL.`, param);
    }
    // One deadline for all of the request's fetches, so many slow URLs cannot add up.
    this.deadline ??= AbortSignal.any([this.ctx.signal, AbortSignal.timeout(config.remoteMediaTimeoutMs)]);
    const left = config.remoteMediaMaxBytes - this.fetched;
    try {
      const media = await this.ctx.fetcher.fetch(url, Math.min(kindMax, left), this.deadline);
      this.fetched += media.bytes.byteLength;
      return media;
    } catch (err) {
      if (err instanceof MediaTooLarge && left < kindMax && left < config.remoteMediaMaxBytes) {
        throw new DomainError("invalid_request", "invalid_media", `Invalid '${param}': the URL's media would bring the request's fetched media over the limit of ${config.remoteMediaMaxBytes} bytes per request.`, param);
      }
      if (err instanceof MediaRefused) throw new DomainError("invalid_request", "invalid_media", `Invalid '${param}': the URL ${err.message}.`, param);
      if (this.ctx.signal.aborted) throw clientGone();
      throw err;
    }
  }
}

function eachPart(messages: Message[], visit: (part: Part, param: string, i: number, j: number) => void): void {
  for (let i = 0; i < messages.length; i++) {
    const content = messages[i]!.content;
    if (!Array.isArray(content)) continue;
    for (let j = 0; j < content.length; j++) {
      const part = content[j] as Part;
      if (part && typeof part === "object") visit(part, `messages[${i}].content[${j}]`, i, j);
    }
  }
}

/**
 * The messages with every media part prepared (the same array when nothing changed). Throws 400
 * for a part that breaks a rule and 429 when the account's decode time is used up.
 */
export async function prepareMedia<M extends Message>(messages: M[], entry: ModelEntry, ctx: MediaContext): Promise<M[]> {
  const work = new RequestMedia(ctx, entry);
  work.check(messages);
  const targets: { i: number; j: number; part: Part; param: string }[] = [];
  eachPart(messages, (part, param, i, j) => {
    if (typeof part.type === "string" && (IMAGE_TYPES.has(part.type) || AV_TYPES.has(part.type))) targets.push({ i, j, part, param });
  });
  let out: M[] | null = null;
  // One part at a time: a request's own decodes queue behind one another, not beside them.
  for (const { i, j, part, param } of targets) {
    const prepared = await work.prepare(part, param);
    if (prepared === part) continue;
    out ??= [...messages];
    const content = out[i]!.content === messages[i]!.content ? [...(messages[i]!.content as Part[])] : (out[i]!.content as Part[]);
    content[j] = prepared;
    out[i] = { ...out[i]!, content };
  }
  return out ?? messages;
}

/** What preparing a chat's media parts uses: the media settings, the fair decode queue and the remote fetcher. */
export interface ChatMediaDeps {
  config: MediaContext["config"];
  imageDecoder: DecodeQueue;
  mediaFetcher: RemoteMediaFetcher;
}

/** The pipeline's entry step: prepares the call's media in place, before the hold. */
export async function prepareChatMedia(
  s: ChatMediaDeps,
  call: { accountId: string; signal: AbortSignal; resolved: { entry: ModelEntry }; request: { messages: Message[] } },
): Promise<void> {
  const ctx: MediaContext = { config: s.config, decoder: s.imageDecoder, fetcher: s.mediaFetcher, accountId: call.accountId, signal: call.signal };
  const messages = await prepareMedia(call.request.messages, call.resolved.entry, ctx);
  if (messages !== call.request.messages) call.request = { ...call.request, messages };
}
