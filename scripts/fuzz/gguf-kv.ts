// Edits of the header (magic, version, counts) and of any KV entry: declared types, re-encoded
// values, string and key lengths, key names, duplicates, removals, array item types and counts.
import { keyText, str, VT, type GVal } from "./gguf-doc.js";
import { lie, randomBytesString, randomVal, show, typeName, type Edit } from "./gguf-edit.js";
import { BAD_UTF8 } from "./values.js";

export const header: Edit = (rng, doc) => {
  switch (rng.int(4)) {
    case 0:
      doc.magic = rng.pick([0, 0x46554746, 0x4c4d4747, 0x47475546, 0x4a544747, 0xffffffff, rng.u32()]);
      return `magic = 0x${doc.magic.toString(16)}`;
    case 1:
      doc.version = rng.pick([0, 1, 2, 4, 5, 0x02000000, 0x03000000, 0x7fffffff, 0xffffffff]);
      return `version = ${doc.version}`;
    case 2:
      doc.tensorCountLie = lie(rng, doc.tensors.length);
      return `tensor count = ${doc.tensorCountLie} (actual ${doc.tensors.length})`;
    default:
      doc.kvCountLie = lie(rng, doc.kvs.length);
      return `KV count = ${doc.kvCountLie} (actual ${doc.kvs.length})`;
  }
};

// KV region, any key

export const kvGeneric: Edit = (rng, doc) => {
  const i = rng.int(doc.kvs.length);
  const kv = doc.kvs[i];
  if (!kv) return "no KV to edit";
  const name = keyText(kv);
  switch (rng.int(9)) {
    case 0: {
      // declared type changed, value bytes kept
      const type = rng.chance(0.8) ? rng.between(0, 12) : rng.pick([13, 255, 0x7fffffff, 0xffffffff]);
      doc.kvs[i] = { ...kv, type };
      return `"${name}": declared type ${typeName(kv.type)} → ${typeName(type)}, value bytes kept`;
    }
    case 1: {
      // re-encoded as another type
      const type = rng.between(0, 12);
      const value = randomVal(rng, type);
      doc.kvs[i] = { ...kv, type, value };
      return `"${name}" = ${show(value)}`;
    }
    case 2: {
      if (kv.value.kind !== "str") {
        doc.kvs[i] = { ...kv, keyLenLie: lie(rng, kv.key.length) };
        return `key "${name}": length declared ${doc.kvs[i]!.keyLenLie} (actual ${kv.key.length})`;
      }
      const value = { ...kv.value, lenLie: lie(rng, kv.value.bytes.length) };
      doc.kvs[i] = { ...kv, value };
      return `"${name}": string length declared ${value.lenLie} (actual ${kv.value.bytes.length})`;
    }
    case 3: {
      const value = str(randomBytesString(rng));
      doc.kvs[i] = { ...kv, type: VT.STRING, value };
      return `"${name}" = ${show(value)}`;
    }
    case 4: {
      const key = rng.weighted([
        [2, Buffer.alloc(0)], [2, Buffer.from("x".repeat(rng.pick([256, 65_536, 70_000])))], [2, Buffer.concat([Buffer.from(name), rng.pick(BAD_UTF8)])],
        [1, Buffer.from(`${name}\u0000`)], [2, Buffer.from(name.toUpperCase())], [2, Buffer.from(keyText(rng.pick(doc.kvs)))],
        [1, Buffer.from("__proto__")], [1, Buffer.from("constructor")],
      ] as const);
      doc.kvs[i] = { ...kv, key };
      return `key "${name}" renamed to ${JSON.stringify(key.subarray(0, 60).toString("utf8"))}${key.length > 60 ? `… (${key.length} bytes)` : ""}`;
    }
    case 5: {
      const copy = rng.chance(0.5) ? kv : { ...kv, value: randomVal(rng, kv.type) };
      doc.kvs.splice(rng.int(doc.kvs.length + 1), 0, copy);
      return `"${name}" duplicated${copy === kv ? "" : ` with ${show(copy.value)}`}`;
    }
    case 6:
      doc.kvs.splice(i, 1);
      return `"${name}" removed`;
    case 7: {
      if (kv.value.kind !== "arr") {
        const type = rng.between(0, 14);
        const value = randomVal(rng, type);
        doc.kvs.push({ key: Buffer.from(`fuzz.extra.${rng.int(1000)}`), type, value });
        return `added "${keyText(doc.kvs[doc.kvs.length - 1]!)}" = ${show(value)} (declared ${typeName(type)})`;
      }
      const itemType = rng.chance(0.8) ? rng.between(0, 12) : rng.pick([13, 255, 0xffffffff]);
      doc.kvs[i] = { ...kv, value: { ...kv.value, itemType } };
      return `"${name}": array item type ${typeName(kv.value.itemType)} → ${typeName(itemType)}, items kept`;
    }
    default: {
      if (kv.value.kind !== "arr") {
        const value: GVal = { kind: "arr", itemType: VT.ARRAY, items: [randomVal(rng, VT.ARRAY, 1), randomVal(rng, VT.ARRAY, 1)] };
        doc.kvs[i] = { ...kv, type: VT.ARRAY, value };
        return `"${name}" = nested ${show(value)}`;
      }
      const value = { ...kv.value, countLie: lie(rng, kv.value.items.length) };
      doc.kvs[i] = { ...kv, value };
      return `"${name}": array count declared ${value.countLie} (actual ${kv.value.items.length})`;
    }
  }
};
