/**
 * Chunk edges. Kokoro surrounds every utterance with silence (measured on the real v1.0 model:
 * ~0.27 s before and ~0.7 s after each chunk), which stitched chunk after chunk made ~1 s gaps in
 * a stream. Each chunk's waveform is cut to its voiced part, keeping a short margin so onsets and
 * decays stay whole, and the pause that belongs between two chunks is put back as exact silence,
 * sized by the punctuation that ended the previous chunk (see pauseAfter in src/text/frontend.ts).
 * Pure functions on float samples.
 */

/** Analysis window: 10 ms at 24 kHz. */
const WINDOW = 240;
/** A window is voiced when its level is within this many dB of the chunk's loudest window... */
const RELATIVE_DB = 40;
/** ...and above this absolute floor (Kokoro's silence sits near -88 dBFS). */
const FLOOR_DBFS = -60;
/** Kept before the first voiced window and after the last one. */
export const LEAD_MARGIN_MS = 20;
export const TAIL_MARGIN_MS = 40;
/** Linear fade over the outermost samples kept, so a cut never clicks. */
const FADE_MS = 5;

function windowDb(wave: Float32Array, at: number): number {
  let sum = 0;
  for (let i = at; i < at + WINDOW; i++) sum += wave[i]! * wave[i]!;
  return 10 * Math.log10(sum / WINDOW + 1e-12);
}

/** [start, end) of the voiced part plus margins; null when nothing is voiced. */
export function voicedRange(wave: Float32Array, sampleRate: number): { start: number; end: number } | null {
  const windows = Math.floor(wave.length / WINDOW);
  if (windows === 0) return wave.length > 0 ? { start: 0, end: wave.length } : null;
  const db = new Float64Array(windows);
  let peak = -Infinity;
  for (let w = 0; w < windows; w++) peak = Math.max(peak, (db[w] = windowDb(wave, w * WINDOW)));
  const threshold = Math.max(peak - RELATIVE_DB, FLOOR_DBFS);
  let first = -1;
  let last = -1;
  for (let w = 0; w < windows; w++) {
    if (db[w]! <= threshold) continue;
    if (first < 0) first = w;
    last = w;
  }
  if (first < 0) return null;
  const lead = Math.round((LEAD_MARGIN_MS * sampleRate) / 1000);
  const tail = Math.round((TAIL_MARGIN_MS * sampleRate) / 1000);
  // A voiced last window reaches to the end: the partial window after it is kept too.
  const voicedEnd = last === windows - 1 ? wave.length : (last + 1) * WINDOW;
  return { start: Math.max(0, first * WINDOW - lead), end: Math.min(wave.length, voicedEnd + tail) };
}

/**
 * The chunk as it is sent: `pauseSamples` of silence, then its voiced part with margins (faded
 * in and out where it was cut). A chunk with no voiced audio is just the pause.
 */
export function shapeChunk(wave: Float32Array, pauseSamples: number, sampleRate: number): Float32Array {
  const range = voicedRange(wave, sampleRate);
  const pause = Math.max(0, Math.round(pauseSamples));
  if (!range) return new Float32Array(pause);
  const out = new Float32Array(pause + range.end - range.start);
  out.set(wave.subarray(range.start, range.end), pause);
  const fade = Math.min(Math.round((FADE_MS * sampleRate) / 1000), (range.end - range.start) >> 1);
  for (let i = 0; i < fade; i++) {
    const g = i / fade;
    if (range.start > 0) out[pause + i]! *= g;
    if (range.end < wave.length) out[out.length - 1 - i]! *= g;
  }
  return out;
}
