// A GGUF file as an editable structure whose every field can also hold a lie: a declared string
// length, array count, dimension count or header count that differs from what follows. The
// serialiser records where each count, length and type field lands, for byte-level mutations.
// The base document comes from make-test-model.ts's own model description, not from a parser,
// so the fuzzer does not depend on the reader it tests.
import { readFile } from "node:fs/promises";
import { GGUF_MAGIC, GgufValueType as VT, ggufLayout, WRITABLE_TYPES, type KvEntry } from "../gguf-writer.js";
import { buildModel, makeTestModel, type MakeModelOptions } from "../make-test-model.js";

export { VT };

export type GVal =
  /** Integers and floats of type U8..F64; U64/I64 carry a bigint. */
  | { kind: "num"; type: VT; value: number | bigint }
  /** A bool is one byte; any byte value may be written. */
  | { kind: "bool"; byte: number }
  | { kind: "str"; bytes: Buffer; lenLie?: bigint }
  | { kind: "arr"; itemType: number; items: GVal[]; countLie?: bigint }
  /** An array whose items are given as encoded bytes (large arrays without one object per item). */
  | { kind: "packed"; itemType: number; count: bigint; payload: Buffer }
  /** Value bytes written verbatim (for unknown value types). */
  | { kind: "raw"; bytes: Buffer };

export interface GKv {
  key: Buffer;
  keyLenLie?: bigint;
  /** The value type written before the value. */
  type: number;
  value: GVal;
}

export interface GTensor {
  name: Buffer;
  nameLenLie?: bigint;
  /** Written instead of dims.length when set. */
  nDimsLie?: number;
  dims: bigint[];
  type: number;
  offset: bigint;
}

export interface GgufDoc {
  magic: number;
  version: number;
  /** Written instead of tensors.length / kvs.length when set. */
  tensorCountLie?: bigint;
  kvCountLie?: bigint;
  kvs: GKv[];
  tensors: GTensor[];
  /** The padding placed between the tensor infos and `data`. */
  alignment: number;
  /** The tensor data section, as in the original file. */
  data: Buffer;
}

/** Where a fixed-size integer field was written (a count, a length, a type, a dimension). */
export interface Span {
  at: number;
  size: 4 | 8;
  label: string;
}

export interface Serialized {
  bytes: Buffer;
  spans: Span[];
  /** End of the tensor infos (start of the padding before the data). */
  headerEnd: number;
}

export const str = (s: string | Buffer): Extract<GVal, { kind: "str" }> => ({ kind: "str", bytes: Buffer.isBuffer(s) ? s : Buffer.from(s, "utf8") });
export const num = (type: VT, value: number | bigint): GVal => ({ kind: "num", type, value });

export function keyText(kv: GKv): string {
  return kv.key.toString("utf8");
}

class Out {
  parts: Buffer[] = [];
  len = 0;
  spans: Span[] = [];
  put(b: Buffer): void {
    this.parts.push(b);
    this.len += b.length;
  }
  int(size: 1 | 2 | 4 | 8, v: number | bigint, signed: boolean, label?: string): void {
    const b = Buffer.alloc(size);
    // wrap any value into the field's width, as a lie written into the file would be
    const bits = BigInt(size * 8);
    let x = BigInt.asUintN(Number(bits), typeof v === "bigint" ? v : BigInt(Math.trunc(Number.isFinite(v) ? v : 0)));
    if (signed) x = BigInt.asIntN(Number(bits), x);
    if (size === 1) signed ? b.writeInt8(Number(x)) : b.writeUInt8(Number(x));
    else if (size === 2) signed ? b.writeInt16LE(Number(x)) : b.writeUInt16LE(Number(x));
    else if (size === 4) signed ? b.writeInt32LE(Number(x)) : b.writeUInt32LE(Number(x));
    else signed ? b.writeBigInt64LE(x) : b.writeBigUInt64LE(x);
    if (label && (size === 4 || size === 8)) this.spans.push({ at: this.len, size, label });
    this.put(b);
  }
  u32(v: number | bigint, label?: string) { this.int(4, v, false, label); }
  u64(v: number | bigint, label?: string) { this.int(8, v, false, label); }
  str(bytes: Buffer, lenLie: bigint | undefined, label: string): void {
    this.u64(lenLie ?? BigInt(bytes.length), `${label} length`);
    this.put(bytes);
  }
}

const INT_WIDTH: Partial<Record<number, [1 | 2 | 4 | 8, boolean]>> = {
  [VT.UINT8]: [1, false], [VT.INT8]: [1, true], [VT.UINT16]: [2, false], [VT.INT16]: [2, true],
  [VT.UINT32]: [4, false], [VT.INT32]: [4, true], [VT.UINT64]: [8, false], [VT.INT64]: [8, true],
};

function writeVal(o: Out, v: GVal, label: string): void {
  switch (v.kind) {
    case "num": {
      if (v.type === VT.FLOAT32 || v.type === VT.FLOAT64) {
        const b = Buffer.alloc(v.type === VT.FLOAT32 ? 4 : 8);
        if (v.type === VT.FLOAT32) b.writeFloatLE(Number(v.value));
        else b.writeDoubleLE(Number(v.value));
        o.put(b);
        return;
      }
      const w = INT_WIDTH[v.type];
      if (!w) throw new Error(`num of non-numeric type ${v.type}`);
      o.int(w[0], v.value, w[1], w[0] >= 4 ? label : undefined);
      return;
    }
    case "bool":
      o.int(1, v.byte, false);
      return;
    case "str":
      o.str(v.bytes, v.lenLie, label);
      return;
    case "arr":
      o.u32(v.itemType, `${label} item type`);
      o.u64(v.countLie ?? BigInt(v.items.length), `${label} count`);
      v.items.forEach((item, i) => writeVal(o, item, i < 4 ? `${label}[${i}]` : label));
      return;
    case "packed":
      o.u32(v.itemType, `${label} item type`);
      o.u64(v.count, `${label} count`);
      o.put(v.payload);
      return;
    case "raw":
      o.put(v.bytes);
      return;
  }
}

export function serialize(doc: GgufDoc): Serialized {
  const o = new Out();
  o.u32(doc.magic, "magic");
  o.u32(doc.version, "version");
  o.u64(doc.tensorCountLie ?? BigInt(doc.tensors.length), "tensor count");
  o.u64(doc.kvCountLie ?? BigInt(doc.kvs.length), "KV count");
  for (const kv of doc.kvs) {
    const name = keyText(kv);
    o.str(kv.key, kv.keyLenLie, `key "${name}"`);
    o.u32(kv.type, `type of "${name}"`);
    writeVal(o, kv.value, `"${name}"`);
  }
  for (const t of doc.tensors) {
    const name = t.name.toString("utf8");
    o.str(t.name, t.nameLenLie, `tensor "${name}" name`);
    o.u32(t.nDimsLie ?? t.dims.length, `tensor "${name}" n_dims`);
    t.dims.forEach((d, i) => o.u64(d, `tensor "${name}" dim ${i}`));
    o.u32(t.type, `tensor "${name}" type`);
    o.u64(t.offset, `tensor "${name}" offset`);
  }
  const headerEnd = o.len;
  const align = doc.alignment > 0 ? doc.alignment : 1;
  o.put(Buffer.alloc((align - (headerEnd % align)) % align));
  o.put(doc.data);
  return { bytes: Buffer.concat(o.parts, o.len), spans: o.spans, headerEnd };
}

function gval(e: KvEntry): GVal {
  switch (e.type) {
    case VT.STRING:
      return str(e.value);
    case VT.BOOL:
      return { kind: "bool", byte: e.value ? 1 : 0 };
    case VT.ARRAY:
      return {
        kind: "arr",
        itemType: e.itemType,
        items: e.itemType === VT.STRING ? e.value.map((s) => str(s)) : (e.value as number[]).map((n) => num(e.itemType, n)),
      };
    default:
      return num(e.type, e.value);
  }
}

export interface BaseModel {
  file: string;
  doc: GgufDoc;
  bytes: Buffer;
}

/** The generated test model (written if missing) and its document; serialize(doc) gives its bytes. */
export async function baseModel(opts: MakeModelOptions = { shape: "tiny", type: "Q8_0", seed: 1 }): Promise<BaseModel> {
  const file = await makeTestModel(opts);
  const bytes = await readFile(file);
  const { kvs, tensors } = buildModel(opts);
  const layout = ggufLayout(kvs, tensors);
  const doc: GgufDoc = {
    magic: GGUF_MAGIC,
    version: 3,
    kvs: kvs.map((e) => ({ key: Buffer.from(e.key, "utf8"), type: e.type, value: gval(e) })),
    tensors: tensors.map((t, i) => ({
      name: Buffer.from(t.name, "utf8"),
      dims: t.dims.map(BigInt),
      type: WRITABLE_TYPES[t.type].id,
      offset: BigInt(layout.offsets[i]!),
    })),
    alignment: 32,
    data: bytes.subarray(layout.dataOffset),
  };
  return { file, doc, bytes };
}
