/**
 * WAV (RIFF, PCM s16le mono) for streaming: the total length is unknown when the header goes
 * out, so the RIFF and data sizes carry 0xFFFFFFFF, the convention streaming players and
 * decoders accept ("read to end of stream").
 */
export const UNKNOWN_SIZE = 0xffffffff;

export function wavHeader(sampleRate: number, channels = 1, dataBytes = UNKNOWN_SIZE): Uint8Array {
  const h = new Uint8Array(44);
  const v = new DataView(h.buffer);
  const ascii = (at: number, s: string) => [...s].forEach((c, i) => (h[at + i] = c.charCodeAt(0)));
  ascii(0, "RIFF");
  v.setUint32(4, dataBytes === UNKNOWN_SIZE ? UNKNOWN_SIZE : 36 + dataBytes, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  v.setUint32(16, 16, true); // fmt chunk size
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, channels, true);
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * channels * 2, true); // byte rate
  v.setUint16(32, channels * 2, true); // block align
  v.setUint16(34, 16, true); // bits per sample
  ascii(36, "data");
  v.setUint32(40, dataBytes, true);
  return h;
}
