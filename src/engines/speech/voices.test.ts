import { describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dialectOf, frontEndFor, STYLE_DIM, VoiceBank, voiceInfo } from "./voices";
import { DomainError } from "../../errors";

function pack(base: number, rows = 510): Float32Array {
  const p = new Float32Array(rows * STYLE_DIM);
  for (let r = 0; r < rows; r++) for (let c = 0; c < STYLE_DIM; c++) p[r * STYLE_DIM + c] = base + r + c / 1000;
  return p;
}

const bank = VoiceBank.fromPacks({ af_bella: pack(0), af_sky: pack(1000), bm_george: pack(2000) });

describe("voice bank", () => {
  test("the style row is the token count, clamped to the pack", () => {
    expect(bank.style(["af_bella"], 7)[3]).toBeCloseTo(7.003, 5);
    expect(bank.style(["af_bella"], 0)[0]).toBe(0);
    expect(bank.style(["af_bella"], 10_000)[0]).toBe(509);
  });

  test("a blend is the equal-weight mean of the voices' rows", () => {
    const s = bank.style(["af_bella", "af_sky", "bm_george"], 12);
    for (let c = 0; c < STYLE_DIM; c++) expect(s[c]).toBeCloseTo((12 + 1012 + 2012) / 3 + c / 1000, 3);
  });

  test.each([
    ["af_bella", ["af_bella"]],
    ["af_bella,af_sky", ["af_bella", "af_sky"]],
    [" af_bella , bm_george ", ["af_bella", "bm_george"]],
  ])("parse %j", (voice, ids) => expect(bank.parse(voice)).toEqual(ids));

  test.each(["nova", "af_bella+af_sky", "af_bella;af_sky", "af_bella af_sky", "af_bella,", ",", "AF_BELLA"])("parse %j → 400 listing the voices", (voice) => {
    try {
      bank.parse(voice);
      throw new Error("accepted");
    } catch (e) {
      expect(e).toBeInstanceOf(DomainError);
      expect((e as DomainError).kind).toBe("invalid_request");
      expect((e as DomainError).param).toBe("voice");
      expect((e as DomainError).message).toContain("af_bella, af_sky, bm_george");
    }
  });

  test("loading skips files that are not voice packs", () => {
    const dir = mkdtempSync(join(tmpdir(), "voices-"));
    try {
      mkdirSync(join(dir, "v"));
      writeFileSync(join(dir, "v", "af_ok.bin"), new Uint8Array(pack(0).buffer));
      writeFileSync(join(dir, "v", "af_bad.bin"), new Uint8Array(10));
      writeFileSync(join(dir, "v", "Bad-Name.bin"), new Uint8Array(pack(0).buffer));
      writeFileSync(join(dir, "v", "notes.txt"), "x");
      const skipped: string[] = [];
      const loaded = VoiceBank.load(join(dir, "v"), (f) => skipped.push(f));
      expect(loaded.ids).toEqual(["af_ok"]);
      expect(skipped.sort()).toEqual(["Bad-Name.bin", "af_bad.bin"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("language and dialect come from the id", () => {
    expect(voiceInfo("bf_emma")).toEqual({ id: "bf_emma", language: "en-GB", gender: "female" });
    expect(voiceInfo("am_adam").language).toBe("en-US");
    expect(dialectOf(["bm_george", "af_sky"])).toBe("gb");
    expect(dialectOf(["af_sky", "bm_george"])).toBe("us");
  });
});

describe("front end by language code", () => {
  const rejects = (ids: string[], lang: string | undefined, param: string, text: RegExp) => {
    try {
      frontEndFor(ids, lang);
      throw new Error("accepted");
    } catch (e) {
      expect(e).toBeInstanceOf(DomainError);
      expect((e as DomainError).kind).toBe("invalid_request");
      expect((e as DomainError).param).toBe(param);
      expect((e as DomainError).message).toMatch(text);
    }
  };
  test.each([
    [["af_heart"], undefined, "us"],
    [["bf_emma", "af_sky"], undefined, "gb"],
    [["jf_alpha"], "a", "us"],
    [["jf_alpha"], "b", "gb"],
    [["af_heart"], "b", "gb"],
  ] as const)("%j with lang_code %j → %s", (ids, lang, dialect) => expect(frontEndFor(ids, lang)).toBe(dialect));
  test.each(["constructor", "toString", "__proto__"])("lang_code %j (a name objects have of their own) is a 400 naming lang_code", (lang) => {
    rejects(["af_heart"], lang, "lang_code", /must be one of/);
  });

  test.each(["jf_alpha", "zf_xiaobei", "ef_dora", "ff_siwis", "hf_alpha", "if_sara", "pf_dora"])("%s without lang_code: 400 naming the languages spoken", (id) => {
    rejects([id], undefined, "voice", /speaks only American English \(a\) and British English \(b\).*lang_code/);
  });

  test("an unknown prefix and a lang_code the front end does not speak are 400s too", () => {
    rejects(["xx_voice"], undefined, "voice", /unknown language/);
    rejects(["af_heart"], "j", "lang_code", /must be one of a, b/);
  });
});
