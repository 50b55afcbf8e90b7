/**
 * An Ogg page writer (RFC 3533) for one logical stream: packets are laced into pages with
 * the CRC-32 (polynomial 0x04C11DB7, no reflection) the format requires.
 */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

export function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[i]!) & 0xff]!) >>> 0;
  return crc >>> 0;
}

export const HEADER_TYPE = { continued: 1, bos: 2, eos: 4 } as const;

export class OggWriter {
  private sequence = 0;

  constructor(private readonly serial: number) {}

  /**
   * One page holding whole packets (at most 255 lacing values, so callers keep pages small).
   * `granule` is the position after the last packet that ends on this page.
   */
  page(packets: Uint8Array[], granule: bigint, flags = 0): Uint8Array {
    const lacing: number[] = [];
    for (const p of packets) {
      for (let n = p.length; ; n -= 255) {
        lacing.push(Math.min(n, 255));
        if (n < 255) break;
      }
    }
    if (lacing.length > 255) throw new RangeError("too many segments for one Ogg page");
    const bodyLength = packets.reduce((n, p) => n + p.length, 0);
    const page = new Uint8Array(27 + lacing.length + bodyLength);
    const v = new DataView(page.buffer);
    page.set([0x4f, 0x67, 0x67, 0x53], 0); // "OggS"
    page[4] = 0; // version
    page[5] = flags;
    v.setBigUint64(6, granule, true);
    v.setUint32(14, this.serial, true);
    v.setUint32(18, this.sequence++, true);
    v.setUint32(22, 0, true); // CRC, filled below
    page[26] = lacing.length;
    page.set(lacing, 27);
    let at = 27 + lacing.length;
    for (const p of packets) {
      page.set(p, at);
      at += p.length;
    }
    v.setUint32(22, oggCrc(page), true);
    return page;
  }
}
