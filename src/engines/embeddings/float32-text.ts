/**
 * JSON text for float32 values, as OpenAI's API writes them: each number is the shortest decimal
 * (at most 9 significant digits) that reads back as the same float32, e.g. `-0.012779145` where
 * the float32 widened to a double would print as `-0.012779145036637783`. A client that parses
 * the number as a double and narrows it to float32 (numpy's float32, a Float32Array) gets exactly
 * the model's value, the same as from the base64 encoding.
 *
 * Why not `String(x)`: a double's shortest text needs up to 17 digits for a widened float32, so
 * the body is ~70% larger, and JavaScriptCore's double-to-text was the largest single cost of a
 * float response in the event loop (~30% of it, profiled with a model that costs nothing).
 *
 * How: round x to p significant digits with one multiplication by an exact power of ten, divide
 * back (the very double a parser makes of that text, both operands being exact) and check that
 * it narrows to x; from p = 9 (always enough for a float32) down to the first p that does not.
 * The digits go straight into bytes. Values whose scale needs a power of ten past 10^22 (not
 * exact as a double) take the slow path through toPrecision.
 */

/** 10^0 … 10^22: every one exact as a double. */
const POW10: number[] = [];
for (let i = 0, p = 1; i <= 22; i++, p *= 10) POW10.push(p);

const DIGIT0 = 48;
const DOT = 46;
const MINUS = 45;
const COMMA = 44;

/** The shortest text of a positive finite float32 `ax` from toPrecision (scales past 10^±22 only). */
function slowText(ax: number): string {
  for (let p = 1; p < 9; p++) {
    const t = Number(ax.toPrecision(p));
    if (Math.fround(t) === ax) return String(t);
  }
  return String(Number(ax.toPrecision(9)));
}

/**
 * ax rounded to an integer after scaling by 10^k (|k| ≤ 22), if that integer × 10^-k reads back as
 * the float32 ax; -1 if not.
 */
function roundTo(ax: number, k: number): number {
  const d = k >= 0 ? Math.round(ax * POW10[k]!) : Math.round(ax / POW10[-k]!);
  const back = k >= 0 ? d / POW10[k]! : d * POW10[-k]!;
  return Math.fround(back) === ax ? d : -1;
}

/** "00" … "99" as ASCII pairs. */
const PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  PAIRS[2 * i] = 48 + Math.floor(i / 10);
  PAIRS[2 * i + 1] = 48 + (i % 10);
}

/** One number's digits, zero-padded to ten, most significant first. */
const TEN = new Uint8Array(10);

/**
 * Puts m (an integer below 10^10) in TEN, zero-padded, and returns where its first digit is. Five
 * independent two-digit lookups rather than one division per digit: m × 10^-j never rounds below
 * m / 10^j (each of these doubles is a little over the power it stands for), so its floor is the
 * exact quotient, and a multiplication is cheaper than a division.
 */
function tenDigits(m: number): number {
  const top = Math.floor(m * 1e-8);
  const low8 = m - top * 1e8;
  const hi4 = Math.floor(low8 * 1e-4);
  const lo4 = low8 - hi4 * 1e4;
  const a = Math.floor(hi4 * 0.01);
  const b = hi4 - a * 100;
  const c = Math.floor(lo4 * 0.01);
  const d = lo4 - c * 100;
  TEN[0] = PAIRS[2 * top]!;
  TEN[1] = PAIRS[2 * top + 1]!;
  TEN[2] = PAIRS[2 * a]!;
  TEN[3] = PAIRS[2 * a + 1]!;
  TEN[4] = PAIRS[2 * b]!;
  TEN[5] = PAIRS[2 * b + 1]!;
  TEN[6] = PAIRS[2 * c]!;
  TEN[7] = PAIRS[2 * c + 1]!;
  TEN[8] = PAIRS[2 * d]!;
  TEN[9] = PAIRS[2 * d + 1]!;
  let first = 0;
  while (TEN[first] === DIGIT0) first++;
  return first;
}

/**
 * Writes the JSON text of the float32 value `x` at `out[at]` and returns where it ends. `out` needs
 * 24 free bytes. A non-finite value, which JSON cannot hold, is written as null.
 */
function putFloat32(x: number, out: Uint8Array, at: number): number {
  if (x === 0) {
    out[at] = DIGIT0;
    return at + 1;
  }
  if (x - x !== 0) return putAscii("null", out, at);
  let ax = x;
  if (x < 0) {
    out[at++] = MINUS;
    ax = -x;
  }
  // The decimal exponent of ax's leading digit; log10 may be one off beside a power of ten, which only starts the search a digit long or short.
  const lead = Math.floor(Math.log10(ax));
  // The search scales by 10^k for k from 9 − lead down to −lead, which must stay within the exact powers.
  if (lead < -13 || lead > 22) return putAscii(slowText(ax), out, at);
  // Nine significant digits always read back as the float32 (ten when log10 came out one too high); then fewer, while they still do.
  let k = 8 - lead;
  let best = roundTo(ax, k);
  if (best < 0) best = roundTo(ax, ++k);
  // (best < 10^10, which tenDigits needs: only an ax within 10^-10 of a power of ten could round up to it, and no float32 but that power itself comes so near.)
  if (best < 0) return putAscii(slowText(ax), out, at);
  for (let d = roundTo(ax, k - 1); d >= 0; d = roundTo(ax, k - 1)) {
    best = d;
    k--;
  }
  let bestK = k;
  // best × 10^-bestK, written without its trailing zeros.
  const first = tenDigits(best);
  let last = 10;
  while (TEN[last - 1] === DIGIT0) {
    last--;
    bestK--;
  }
  const n = last - first;
  // Digits before the point; JavaScript's layout: plain for 10^-6 ≤ |x| < 10^21, an exponent outside it.
  const point = n - bestK;
  if (point > 0 && point <= 21) {
    for (let i = 0; i < point; i++) out[at++] = i < n ? TEN[first + i]! : DIGIT0;
    if (point < n) {
      out[at++] = DOT;
      for (let i = point; i < n; i++) out[at++] = TEN[first + i]!;
    }
    return at;
  }
  if (point <= 0 && point > -6) {
    out[at++] = DIGIT0;
    out[at++] = DOT;
    for (let i = point; i < 0; i++) out[at++] = DIGIT0;
    for (let i = first; i < last; i++) out[at++] = TEN[i]!;
    return at;
  }
  out[at++] = TEN[first]!;
  if (n > 1) {
    out[at++] = DOT;
    for (let i = first + 1; i < last; i++) out[at++] = TEN[i]!;
  }
  return putAscii(`e${point - 1 < 0 ? "-" : "+"}${Math.abs(point - 1)}`, out, at);
}

function putAscii(s: string, out: Uint8Array, at: number): number {
  for (let i = 0; i < s.length; i++) out[at++] = s.charCodeAt(i);
  return at;
}

let scratch = new Uint8Array(16 * 1024);

/** The JSON array of `v`'s values, each as putFloat32 writes it. */
export function writeFloat32s(v: Float32Array): string {
  const need = v.length * 25 + 2;
  if (scratch.length < need) scratch = new Uint8Array(need);
  const out = scratch;
  let at = 0;
  out[at++] = 91; // [
  for (let i = 0; i < v.length; i++) {
    if (i > 0) out[at++] = COMMA;
    at = putFloat32(v[i]!, out, at);
  }
  out[at++] = 93; // ]
  return Buffer.from(out.buffer, out.byteOffset, at).toString("latin1");
}
