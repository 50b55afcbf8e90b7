/**
 * Kokoro voice packs: voices/<id>.bin, raw little-endian float32 [510, 256] (some exports write
 * [510, 1, 256]: the same bytes). Row r is the style for an utterance of r phoneme tokens, so the
 * row is picked per chunk. A comma-joined list of voices is blended with equal weight by
 * averaging their style rows.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { invalidField } from "../../errors";
import type { Dialect } from "../../text/normalize";

export const STYLE_DIM = 256;

export interface VoiceInfo {
  id: string;
  /** BCP 47 language of the voice, from its id's first letter (a = American English, ...). */
  language: string;
  gender: "female" | "male" | null;
}

/** Kokoro's language codes: the first letter of a voice id. */
export const LANGUAGES: Record<string, string> = {
  a: "en-US", b: "en-GB", e: "es", f: "fr", h: "hi", i: "it", j: "ja", p: "pt-BR", z: "zh",
};
const LANGUAGE_NAMES: Record<string, string> = {
  a: "American English", b: "British English", e: "Spanish", f: "French", h: "Hindi", i: "Italian", j: "Japanese", p: "Brazilian Portuguese", z: "Mandarin Chinese",
};

/** The languages the text front end speaks (src/text): English, American or British. */
export const FRONT_END_LANGUAGES: Record<string, Dialect> = { a: "us", b: "gb" };

export function voiceInfo(id: string): VoiceInfo {
  const g = id[1];
  return { id, language: LANGUAGES[id[0] ?? ""] ?? "und", gender: g === "f" ? "female" : g === "m" ? "male" : null };
}

export class VoiceBank {
  private constructor(private readonly packs: ReadonlyMap<string, Float32Array>) {}

  /** Reads every voices/*.bin; a file whose size is not whole 256-float rows is skipped. */
  static load(voicesDir: string, onSkip: (file: string, why: string) => void = () => {}): VoiceBank {
    const packs = new Map<string, Float32Array>();
    for (const file of readdirSync(voicesDir).sort()) {
      if (!file.endsWith(".bin")) continue;
      const id = file.slice(0, -4);
      if (!/^[a-z0-9_]+$/.test(id)) {
        onSkip(file, "voice ids are lower-case letters, digits and underscores");
        continue;
      }
      const bytes = readFileSync(join(voicesDir, file));
      if (bytes.byteLength === 0 || bytes.byteLength % (STYLE_DIM * 4) !== 0) {
        onSkip(file, `size ${bytes.byteLength} is not a whole number of ${STYLE_DIM}-float rows`);
        continue;
      }
      const copy = new Uint8Array(bytes); // aligned copy for the Float32Array view
      packs.set(id, new Float32Array(copy.buffer, 0, copy.byteLength / 4));
    }
    return new VoiceBank(packs);
  }

  static fromPacks(packs: Record<string, Float32Array>): VoiceBank {
    return new VoiceBank(new Map(Object.entries(packs)));
  }

  get ids(): string[] {
    return [...this.packs.keys()];
  }

  get size(): number {
    return this.packs.size;
  }

  /**
   * Parses the request's `voice`: one id, or several joined by commas (spaces around them are
   * tolerated). Any unknown id, empty part or other separator is a 400 listing the valid voices.
   */
  parse(voice: string): string[] {
    const ids = voice.split(",").map((v) => v.trim());
    for (const id of ids) {
      if (!this.packs.has(id)) {
        const what = id === "" ? "an empty voice id" : `unknown voice '${id.slice(0, 64)}'`;
        throw invalidField("voice", `${what}; use one of ${this.ids.join(", ")}, or several joined by commas (e.g. "${this.ids.slice(0, 2).join(",")}")`);
      }
    }
    return ids;
  }

  /** The style vector for `tokens` phoneme tokens: each voice's row, averaged. */
  style(ids: readonly string[], tokens: number): Float32Array {
    const out = new Float32Array(STYLE_DIM);
    for (const id of ids) {
      const pack = this.packs.get(id)!;
      const rows = pack.length / STYLE_DIM;
      const row = Math.min(Math.max(tokens, 0), rows - 1);
      for (let i = 0; i < STYLE_DIM; i++) out[i]! += pack[row * STYLE_DIM + i]! / ids.length;
    }
    return out;
  }
}

/** British English voices (b*) get British pronunciation; every other voice American. */
export function dialectOf(voiceIds: readonly string[]): Dialect {
  return voiceIds[0]?.startsWith("b") ? "gb" : "us";
}

const spoken = () => Object.keys(FRONT_END_LANGUAGES).map((c) => `${LANGUAGE_NAMES[c]} (${c})`).join(" and ");

/**
 * The front end that reads the text: chosen by the first voice's language code, or by
 * `langCode` when given (Kokoro-FastAPI's `lang_code`: an explicit choice, e.g. to read English
 * with a Japanese voice). A language the front end does not speak is a 400 naming those it does.
 */
export function frontEndFor(voiceIds: readonly string[], langCode?: string): Dialect {
  if (langCode !== undefined) {
    const d = Object.hasOwn(FRONT_END_LANGUAGES, langCode) ? FRONT_END_LANGUAGES[langCode] : undefined;
    if (!d) throw invalidField("lang_code", `must be one of ${Object.keys(FRONT_END_LANGUAGES).join(", ")}: the text front end speaks ${spoken()}`);
    return d;
  }
  const first = voiceIds[0] ?? "";
  const code = first[0] ?? "";
  const d = Object.hasOwn(FRONT_END_LANGUAGES, code) ? FRONT_END_LANGUAGES[code] : undefined;
  if (d) return d;
  const language = Object.hasOwn(LANGUAGE_NAMES, code) ? `${LANGUAGE_NAMES[code]} (${code})` : `an unknown language ('${code}')`;
  throw invalidField(
    "voice",
    `voice '${first}' is for ${language}, but the text front end speaks only ${spoken()}; use an ${Object.keys(FRONT_END_LANGUAGES).join("* or ")}* voice, or set lang_code to "a" or "b" to read English text with this voice`,
  );
}
