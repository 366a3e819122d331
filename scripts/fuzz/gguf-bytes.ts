// Byte-level damage to a serialised GGUF: bit flips, runs of bytes, truncation, insertion,
// deletion, a copied span of the header, an edge value over a recorded count or length field.
import type { Serialized } from "./gguf-doc.js";
import type { Rng } from "./prng.js";
import { edgeU64 } from "./values.js";

export function byteLevel(rng: Rng, s: Serialized): { bytes: Buffer; edit: string } {
  let b = Buffer.from(s.bytes);
  if (b.length === 0) return { bytes: b, edit: "nothing left to damage" };
  // an earlier edit of this case may have cut the file short: positions stay inside it
  const headerEnd = Math.min(s.headerEnd, b.length);
  const inHeader = () => rng.int(Math.max(1, headerEnd));
  switch (rng.int(7)) {
    case 0: {
      const n = rng.between(1, 8);
      const where = rng.chance(0.8) ? "header" : "file";
      const at: number[] = [];
      for (let i = 0; i < n; i++) {
        const o = where === "header" ? inHeader() : rng.int(b.length);
        b[o] = b[o]! ^ (1 << rng.int(8));
        at.push(o);
      }
      return { bytes: b, edit: `${n} bit flips at ${at.join(", ")}` };
    }
    case 1: {
      const at = inHeader();
      const n = rng.between(1, 64);
      const fill = rng.pick([0x00, 0xff, 0x7f, 0x80, -1]);
      const run = fill < 0 ? rng.bytes(n) : Buffer.alloc(n, fill);
      run.copy(b, at);
      return { bytes: b, edit: `${n} bytes at ${at} set to ${fill < 0 ? "random" : `0x${fill.toString(16)}`}` };
    }
    case 2: {
      const at = rng.weighted([[4, inHeader()], [2, headerEnd + rng.int(Math.max(1, b.length - headerEnd))], [1, b.length - 1], [1, rng.int(24)]] as const);
      return { bytes: b.subarray(0, at), edit: `truncated to ${at} of ${b.length} bytes` };
    }
    case 3: {
      const at = inHeader();
      const ins = rng.bytes(rng.between(1, 64));
      return { bytes: Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]), edit: `${ins.length} random bytes inserted at ${at}` };
    }
    case 4: {
      const at = inHeader();
      const n = rng.between(1, 64);
      return { bytes: Buffer.concat([b.subarray(0, at), b.subarray(at + n)]), edit: `${n} bytes deleted at ${at}` };
    }
    case 5: {
      // earlier edits of this case may have cut the file short
      const spans = s.spans.filter((sp) => sp.at + sp.size <= b.length);
      if (spans.length === 0) return { bytes: b, edit: "no field left to overwrite" };
      const span = rng.pick(spans);
      const v = edgeU64(rng);
      if (span.size === 4) b.writeUInt32LE(Number(BigInt.asUintN(32, v)), span.at);
      else b.writeBigUInt64LE(v, span.at);
      return { bytes: b, edit: `${span.label} (${span.size} bytes at ${span.at}) overwritten with ${BigInt.asUintN(span.size * 8, v)}` };
    }
    default: {
      const n = rng.between(4, 256);
      const from = inHeader();
      const to = inHeader();
      b = Buffer.from(b);
      b.copy(b, to, from, Math.min(from + n, headerEnd));
      return { bytes: b, edit: `${n} header bytes copied from ${from} to ${to}` };
    }
  }
}
