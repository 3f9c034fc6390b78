// What the desktop tests read of a screenshot: the PNG's size from its
// IHDR chunk (its bytes parsed here, its CRC checked), and its pixels, for
// the 8-bit truecolour images (RGB or RGBA, not interlaced) the desktop
// helper writes, inflated with Node's zlib.

import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; ++n) {
    let c = n;
    for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

interface Chunk {
  type: string;
  data: Buffer;
}

// The chunks of a PNG, each CRC checked, the signature first.
function chunks(png: Uint8Array): Chunk[] {
  const bytes = Buffer.from(png.buffer, png.byteOffset, png.length);
  assert.ok(bytes.length >= 8 && SIGNATURE.every((b, i) => bytes[i] === b), 'the PNG signature');
  const found: Chunk[] = [];
  for (let at = 8; at < bytes.length;) {
    assert.ok(at + 12 <= bytes.length, 'a chunk within the file');
    const length = bytes.readUInt32BE(at);
    assert.ok(at + 12 + length <= bytes.length, 'a chunk within the file');
    const typeAndData = bytes.subarray(at + 4, at + 8 + length);
    assert.equal(bytes.readUInt32BE(at + 8 + length), crc32(typeAndData), 'a chunk CRC');
    found.push({ type: typeAndData.subarray(0, 4).toString('latin1'), data: bytes.subarray(at + 8, at + 8 + length) });
    at += 12 + length;
  }
  assert.equal(found.at(-1)?.type, 'IEND', 'the last chunk is IEND');
  return found;
}

export interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colourType: number;
  interlace: number;
}

/**
 * A PNG's header from its first 33 bytes: the signature, then IHDR (length
 * 13, "IHDR", width and height big-endian, bit depth, colour type,
 * compression, filter, interlace, and the CRC of type and data).
 */
export function pngHeader(png: Uint8Array): PngHeader {
  const b = Buffer.from(png.buffer, png.byteOffset, png.length);
  assert.ok(b.length >= 33, 'a PNG holds at least its signature and IHDR');
  assert.deepEqual([...b.subarray(0, 8)], SIGNATURE, 'the PNG signature');
  assert.equal(b.readUInt32BE(8), 13, "IHDR's length");
  assert.equal(b.subarray(12, 16).toString('latin1'), 'IHDR', 'the first chunk is IHDR');
  assert.equal(b.readUInt32BE(29), crc32(b.subarray(12, 29)), "IHDR's CRC");
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20), bitDepth: b[24]!, colourType: b[25]!, interlace: b[28]! };
}

export interface PngImage {
  width: number;
  height: number;
  /** The pixel's colour as 0xRRGGBB. */
  at(x: number, y: number): number;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

export function decodePng(png: Uint8Array): PngImage {
  const header = pngHeader(png);
  assert.equal(header.bitDepth, 8, 'an 8-bit PNG');
  assert.ok(header.colourType === 2 || header.colourType === 6, `a truecolour PNG (colour type ${header.colourType})`);
  assert.equal(header.interlace, 0, 'not interlaced');
  const channels = header.colourType === 6 ? 4 : 3;
  const stride = header.width * channels;
  const raw = zlib.inflateSync(Buffer.concat(chunks(png).filter((c) => c.type === 'IDAT').map((c) => c.data)));
  assert.equal(raw.length, header.height * (stride + 1), 'the image data holds every row');
  const pixels = Buffer.alloc(header.height * stride);
  for (let y = 0; y < header.height; ++y) {
    const filter = raw[y * (stride + 1)]!;
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; ++i) {
      const left = i >= channels ? pixels[y * stride + i - channels]! : 0;
      const up = y > 0 ? pixels[(y - 1) * stride + i]! : 0;
      const upLeft = y > 0 && i >= channels ? pixels[(y - 1) * stride + i - channels]! : 0;
      const predicted = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][filter];
      assert.ok(predicted !== undefined, `a known row filter (${filter})`);
      pixels[y * stride + i] = (row[i]! + predicted) & 0xff;
    }
  }
  return {
    width: header.width,
    height: header.height,
    at(x, y) {
      const i = y * stride + x * channels;
      return (pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!;
    },
  };
}
