/** Float samples in [-1, 1] to 16-bit signed integers (clipped), the form every encoder takes. */
export function floatToInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]!;
    const c = v > 1 ? 1 : v < -1 ? -1 : Number.isNaN(v) ? 0 : v;
    out[i] = Math.round(c * 32767);
  }
  return out;
}

/** Little-endian bytes of 16-bit samples (raw s16le). */
export function int16Bytes(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i]!, true);
  return out;
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
