// The building blocks of the GGUF edits: finding and replacing KV entries, values of any type
// (also unknown type ids), count lies, and a one-line description of a value.
import type { Rng } from "./prng.js";
import { keyText, num, str, VT, type GgufDoc, type GVal } from "./gguf-doc.js";
import { BAD_UTF8, edgeFloat, edgeInt, edgeU64, nastyString } from "./values.js";

/** An edit of the document; returns a line that says what it did. */
export type Edit = (rng: Rng, doc: GgufDoc) => string;

export const ARCH = "llama";

export function cloneDoc(d: GgufDoc): GgufDoc {
  // KV entries and values are replaced, never edited in place; tensor infos are copied
  return { ...d, kvs: [...d.kvs], tensors: d.tensors.map((t) => ({ ...t, dims: [...t.dims] })) };
}

export function kvIndex(doc: GgufDoc, key: string): number {
  return doc.kvs.findIndex((kv) => keyText(kv) === key);
}

export function setKv(doc: GgufDoc, key: string, type: number, value: GVal): void {
  const i = kvIndex(doc, key);
  const kv = { key: Buffer.from(key, "utf8"), type, value };
  if (i >= 0) doc.kvs[i] = kv;
  else doc.kvs.push(kv);
}

export function removeKv(doc: GgufDoc, key: string): boolean {
  const i = kvIndex(doc, key);
  if (i >= 0) doc.kvs.splice(i, 1);
  return i >= 0;
}

export function arrayOf(doc: GgufDoc, key: string): GVal[] | undefined {
  const kv = doc.kvs[kvIndex(doc, key)];
  return kv?.value.kind === "arr" ? kv.value.items : undefined;
}

export function typeName(t: number): string {
  return VT[t] ?? `type#${t}`;
}

export function show(v: GVal): string {
  switch (v.kind) {
    case "num":
      return `${typeName(v.type)} ${String(v.value)}`;
    case "bool":
      return `BOOL byte ${v.byte}`;
    case "str":
      return `STRING ${v.bytes.length} bytes${v.lenLie !== undefined ? ` (declared ${v.lenLie})` : ""} ${JSON.stringify(v.bytes.subarray(0, 40).toString("utf8"))}${v.bytes.length > 40 ? "…" : ""}`;
    case "arr":
      return `ARRAY of ${typeName(v.itemType)} × ${v.items.length}${v.countLie !== undefined ? ` (declared ${v.countLie})` : ""}`;
    case "packed":
      return `ARRAY of ${typeName(v.itemType)} × ${v.count} (${v.payload.length} payload bytes)`;
    case "raw":
      return `${v.bytes.length} raw bytes`;
  }
}

export function randomBytesString(rng: Rng): Buffer {
  if (rng.chance(0.25)) return Buffer.concat([Buffer.from("tok"), rng.pick(BAD_UTF8), Buffer.from("en")]);
  return Buffer.from(nastyString(rng), "utf8");
}

export const NUMERIC_TYPES = [VT.UINT8, VT.INT8, VT.UINT16, VT.INT16, VT.UINT32, VT.INT32, VT.FLOAT32, VT.UINT64, VT.INT64, VT.FLOAT64];

export function randomNum(rng: Rng, type: VT): GVal {
  if (type === VT.FLOAT32 || type === VT.FLOAT64) return num(type, edgeFloat(rng));
  if (type === VT.UINT64 || type === VT.INT64) return num(type, rng.chance(0.7) ? edgeU64(rng) : BigInt(rng.u32()));
  return num(type, rng.chance(0.7) ? edgeInt(rng) : rng.u32());
}

/** A value of `type` (any id, also unknown ones), arrays nested at most a few levels. */
export function randomVal(rng: Rng, type: number, depth = 0): GVal {
  if ((NUMERIC_TYPES as number[]).includes(type)) return randomNum(rng, type as VT);
  if (type === VT.BOOL) return { kind: "bool", byte: rng.pick([0, 1, 2, 0x80, 0xff]) };
  if (type === VT.STRING) return str(randomBytesString(rng));
  if (type === VT.ARRAY) {
    const itemType = depth < 5 && rng.chance(0.2) ? VT.ARRAY : rng.chance(0.9) ? rng.pick([...NUMERIC_TYPES, VT.BOOL, VT.STRING]) : rng.between(13, 255);
    // nested arrays stay small: 64 items at each of 5 levels would be a billion
    const n = itemType === VT.ARRAY ? rng.pick([0, 1, 2]) : rng.pick([0, 1, 2, 5, 64]);
    return { kind: "arr", itemType, items: Array.from({ length: n }, () => randomVal(rng, itemType, depth + 1)) };
  }
  return { kind: "raw", bytes: rng.bytes(rng.int(17)) };
}

const COUNT_LIES = (actual: number): bigint[] => [0n, BigInt(Math.max(0, actual - 1)), BigInt(actual + 1), BigInt(actual + 1000), 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n];

export function lie(rng: Rng, actual: number): bigint {
  return rng.chance(0.7) ? rng.pick(COUNT_LIES(actual)) : edgeU64(rng);
}

/** A u32 array of `count` equal values, packed when large. */
export function u32Array(count: number, value: number): GVal {
  if (count <= 4096) return { kind: "arr", itemType: VT.UINT32, items: Array.from({ length: count }, () => num(VT.UINT32, value)) };
  const payload = Buffer.alloc(count * 4);
  for (let i = 0; i < count; i++) payload.writeUInt32LE(value >>> 0, i * 4);
  return { kind: "packed", itemType: VT.UINT32, count: BigInt(count), payload };
}
