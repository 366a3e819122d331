// Edits of the tensor infos: dimensions, dimension counts, types, offsets, names, removed and
// added tensors.
import { lie, type Edit } from "./gguf-edit.js";
import { BAD_UTF8 } from "./values.js";

const TENSOR_TYPES = [0, 1, 2, 3, 6, 8, 10, 12, 14, 15, 24, 26, 28, 30, 39, 41, 42];

export const tensorInfo: Edit = (rng, doc) => {
  const i = rng.int(doc.tensors.length);
  const t = doc.tensors[i];
  if (!t) return "no tensor to edit";
  const name = t.name.toString("utf8");
  switch (rng.int(9)) {
    case 0: {
      const d = rng.int(t.dims.length);
      const orig = t.dims[d]!;
      t.dims[d] = rng.pick([0n, 1n, orig * 2n, orig / 2n, orig + 32n, 2n ** 31n, 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n]);
      return `tensor "${name}" dim ${d}: ${orig} → ${t.dims[d]}`;
    }
    case 1:
      if (t.dims.length >= 2) {
        t.dims.reverse();
        return `tensor "${name}" dims reversed to [${t.dims.join(", ")}]`;
      }
      t.dims.push(rng.pick([1n, 2n, 1000n]));
      return `tensor "${name}" gains a dimension: [${t.dims.join(", ")}]`;
    case 2:
      t.nDimsLie = rng.pick([0, 1, 3, 4, 5, 8, 64, 2 ** 31, 2 ** 32 - 1]);
      return `tensor "${name}" n_dims declared ${t.nDimsLie} (actual ${t.dims.length})`;
    case 3: {
      const orig = t.type;
      t.type = rng.chance(0.8) ? rng.pick(TENSOR_TYPES) : rng.pick([4, 5, 43, 255, 2 ** 31, 2 ** 32 - 1]);
      return `tensor "${name}" type ${orig} → ${t.type}`;
    }
    case 4: {
      const orig = t.offset;
      const other = doc.tensors[rng.int(doc.tensors.length)]!.offset;
      t.offset = rng.pick([orig + 1n, orig + 31n, orig + 32n, other, 0n, BigInt(doc.data.length), BigInt(doc.data.length) + 32n, 2n ** 63n, 2n ** 64n - 32n]);
      return `tensor "${name}" offset ${orig} → ${t.offset}`;
    }
    case 5: {
      const other = doc.tensors[rng.int(doc.tensors.length)]!.name;
      t.name = rng.pick([Buffer.alloc(0), Buffer.from("x".repeat(rng.pick([64, 2000]))), Buffer.concat([t.name, rng.pick(BAD_UTF8)]), Buffer.from("blk.99.attn_q.weight"), Buffer.from(name.replace(".weight", "")), other]);
      return `tensor "${name}" renamed to ${JSON.stringify(t.name.subarray(0, 60).toString("utf8"))}`;
    }
    case 6:
      t.nameLenLie = lie(rng, t.name.length);
      return `tensor "${name}" name length declared ${t.nameLenLie} (actual ${t.name.length})`;
    case 7:
      doc.tensors.splice(i, 1);
      return `tensor "${name}" removed`;
    default: {
      const extra = { name: Buffer.from(rng.pick([name, "blk.2.attn_q.weight", "fuzz.extra"])), dims: [rng.pick([32n, 64n, 2n ** 32n]), rng.pick([1n, 64n, 2n ** 20n])], type: rng.pick(TENSOR_TYPES), offset: rng.pick([0n, 32n, BigInt(doc.data.length)]) };
      doc.tensors.splice(rng.int(doc.tensors.length + 1), 0, extra);
      return `tensor info added: "${extra.name.toString()}" [${extra.dims.join(", ")}] type ${extra.type} offset ${extra.offset}`;
    }
  }
};
