/**
 * Image parts of a chat request, before anything is held or sent (contract §10): a model without
 * image input refuses them (400 naming the part), `data:` URLs are decoded, checked and
 * normalised locally (src/images/normalise.ts), remote URLs go to the upstream untouched.
 */
import type { ModelEntry } from "../catalog/catalog";
import { DomainError } from "../errors";
import { decodeDataUrl, ImageRejected, normaliseImage, type ImageLimits } from "../images/normalise";

const IMAGE_PART_TYPES = new Set(["image_url", "input_image", "image"]);

type Part = { type?: unknown; image_url?: unknown };
type Message = { content?: unknown };

function urlOf(part: Part): string | null {
  const v = part.image_url;
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as { url?: unknown }).url === "string") return (v as { url: string }).url;
  return null;
}

function withUrl(part: Part, url: string): Part {
  const v = part.image_url;
  return { ...part, image_url: typeof v === "string" ? url : { ...(v as object), url } };
}

/**
 * Returns the messages with every `data:` image normalised (the same array when there is none).
 * Throws 400 for images sent to a text-only model and for images that fail a check.
 */
export async function prepareImages<M extends Message>(messages: M[], entry: ModelEntry, limits: ImageLimits): Promise<M[]> {
  const acceptsImages = entry.inputModalities.includes("image");
  let out: M[] | null = null;
  for (let i = 0; i < messages.length; i++) {
    const content = messages[i]!.content;
    if (!Array.isArray(content)) continue;
    let parts: Part[] | null = null;
    for (let j = 0; j < content.length; j++) {
      const part = content[j] as Part;
      if (!part || typeof part !== "object" || !IMAGE_PART_TYPES.has(part.type as string)) continue;
      const param = `messages[${i}].content[${j}]`;
      if (!acceptsImages) {
        throw new DomainError("invalid_request", "image_input_not_supported", `Invalid '${param}': the model '${entry.id}' does not accept image input; send text only, or use a model whose input_modalities include "image".`, param);
      }
      if (part.type !== "image_url") continue;
      const url = urlOf(part);
      if (url === null) throw new DomainError("invalid_request", "invalid_value", `Invalid '${param}.image_url': must be an object with a 'url' string.`, `${param}.image_url`);
      if (!/^data:/i.test(url)) continue;
      try {
        const image = await normaliseImage(decodeDataUrl(url, limits.maxBytes), limits);
        parts ??= [...(content as Part[])];
        parts[j] = withUrl(part, image.dataUrl);
      } catch (err) {
        if (err instanceof ImageRejected) throw new DomainError("invalid_request", "invalid_image", `Invalid '${param}': the image ${err.message}.`, param);
        throw err;
      }
    }
    if (parts) {
      out ??= [...messages];
      out[i] = { ...messages[i]!, content: parts };
    }
  }
  return out ?? messages;
}

/** The pipeline's entry step: normalises the call's images in place, before the hold. */
export async function prepareChatImages(
  s: { config: { imageMaxBytes: number; imageMaxPixels: number; imageMaxEdge: number } },
  call: { resolved: { entry: ModelEntry }; request: { messages: Message[] } },
): Promise<void> {
  const limits = { maxBytes: s.config.imageMaxBytes, maxPixels: s.config.imageMaxPixels, maxEdge: s.config.imageMaxEdge };
  const messages = await prepareImages(call.request.messages, call.resolved.entry, limits);
  if (messages !== call.request.messages) call.request = { ...call.request, messages };
}
