import { describe, expect, test } from "bun:test";
import { LEAD_MARGIN_MS, TAIL_MARGIN_MS, shapeChunk, voicedRange } from "./silence";

const RATE = 24_000;
const ms = (x: number) => Math.round((x * RATE) / 1000);

/** `lead` ms of near-silence (-90 dBFS noise), `voiced` ms of a 0.3 sine, `tail` ms of near-silence. */
function utterance(lead: number, voiced: number, tail: number): Float32Array {
  const w = new Float32Array(ms(lead) + ms(voiced) + ms(tail));
  for (let i = 0; i < w.length; i++) w[i] = 3e-5 * Math.sin(i);
  for (let i = 0; i < ms(voiced); i++) w[ms(lead) + i] = 0.3 * Math.sin((2 * Math.PI * 220 * i) / RATE);
  return w;
}

describe("chunk edges", () => {
  test("Kokoro-like silence (0.27 s before, 0.7 s after) is cut to the margins", () => {
    const w = utterance(270, 1000, 700);
    const r = voicedRange(w, RATE)!;
    expect(ms(270) - r.start).toBeGreaterThanOrEqual(ms(LEAD_MARGIN_MS) - 240);
    expect(ms(270) - r.start).toBeLessThanOrEqual(ms(LEAD_MARGIN_MS) + 240);
    const voicedEnd = ms(270) + ms(1000);
    expect(r.end - voicedEnd).toBeGreaterThanOrEqual(ms(TAIL_MARGIN_MS) - 240);
    expect(r.end - voicedEnd).toBeLessThanOrEqual(ms(TAIL_MARGIN_MS) + 240);
    const out = shapeChunk(w, 0, RATE);
    expect(out.length).toBe(r.end - r.start);
    expect(out.length / RATE).toBeLessThan(1.1);
  });

  test("the pause is exact silence before the kept audio, which is faded in where it was cut", () => {
    const w = utterance(200, 500, 200);
    const out = shapeChunk(w, ms(300), RATE);
    expect(out.subarray(0, ms(300)).every((x) => x === 0)).toBe(true);
    const r = voicedRange(w, RATE)!;
    expect(out.length).toBe(ms(300) + r.end - r.start);
    expect(Math.abs(out[ms(300)]!)).toBeLessThanOrEqual(Math.abs(w[r.start]!));
  });

  test("audio that is loud to its edges is kept whole and untouched", () => {
    const w = utterance(0, 800, 0);
    expect(voicedRange(w, RATE)).toEqual({ start: 0, end: w.length });
    expect(shapeChunk(w, 0, RATE)).toEqual(w);
  });

  test("a silent chunk is only its pause; an empty one too", () => {
    expect(shapeChunk(new Float32Array(4800), 100, RATE)).toEqual(new Float32Array(100));
    expect(shapeChunk(new Float32Array(0), 50, RATE).length).toBe(50);
  });
});
