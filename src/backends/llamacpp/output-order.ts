// One request must never sample from another's logits.
//
// llama.cpp computes a batch in micro-batches; with one KV cache per sequence it splits the
// sequences' tokens equally, so when a longer prompt comes before a shorter one in the batch, the
// shorter one's output row is computed first. It puts the rows back in the batch's order lazily,
// on the first read of the logits after the decode (llama_context::output_reorder), without a
// lock. node-llama-cpp samples each sequence of a batch in a worker thread of its own, all at
// once: two first reads can then reorder the same rows at the same time, which swaps them twice
// or half-way, and a request goes on from another request's logits (seen as two concurrent
// prompts of different lengths trading their first tokens, on a busy machine).
//
// So after a decode whose outputs may be out of order (some item of several tokens, and two
// outputs or more), the first sample runs alone; the others start once it is done. Batches of
// single tokens (decode steps) and batches with one output keep full parallel sampling.
import type { LlamaContext } from "node-llama-cpp";

/** The parts of node-llama-cpp 3.21.1's native context (`LlamaContext._ctx`) this wraps. */
interface NativeContext {
  initBatch(size: number): void;
  addToBatch(sequenceId: number, firstTokenIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array;
  decodeBatch(): Promise<void>;
  sampleToken(batchLogitIndex: number, sampler: unknown, ...rest: unknown[]): Promise<unknown>;
}

function nativeOf(context: LlamaContext): NativeContext | undefined {
  const native = (context as unknown as { _ctx?: unknown })._ctx;
  if (typeof native !== "object" || native === null) return undefined;
  const n = native as Record<string, unknown>;
  const fns = ["initBatch", "addToBatch", "decodeBatch", "sampleToken"];
  return fns.every((f) => typeof n[f] === "function") ? (native as NativeContext) : undefined;
}

/**
 * Makes the first sample after each reordering-prone decode of `context` run alone. Returns
 * false (and changes nothing) when the context is not the shape this knows (another
 * node-llama-cpp version), for the runner to report.
 */
export function guardOutputOrder(context: LlamaContext): boolean {
  const native = nativeOf(context);
  if (!native) return false;
  const init = native.initBatch.bind(native);
  const add = native.addToBatch.bind(native);
  const decode = native.decodeBatch.bind(native);
  const sample = native.sampleToken.bind(native);
  // The batch being filled.
  let outputs = 0;
  let multiToken = false;
  // After a decode whose rows may be out of order: true until a first sample starts, then that
  // sample until it has ended (it has put the rows in order); false when reads may run in parallel.
  let reorder: boolean | Promise<unknown> = false;

  const wrapped: NativeContext = {
    initBatch: (size) => {
      outputs = 0;
      multiToken = false;
      init(size);
    },
    addToBatch: (sequenceId, firstTokenIndex, tokens, logitIndexes) => {
      const indexes = add(sequenceId, firstTokenIndex, tokens, logitIndexes);
      outputs += logitIndexes.length;
      multiToken ||= tokens.length > 1;
      return indexes;
    },
    decodeBatch: async () => {
      reorder = false;
      await decode();
      reorder = outputs >= 2 && multiToken;
    },
    sampleToken: (...args) => {
      if (reorder === false) return sample(...args);
      const run = () => sample(...args);
      if (reorder !== true) return reorder.then(run, run);
      const first = run();
      reorder = first;
      const done = () => {
        if (reorder === first) reorder = false;
      };
      first.then(done, done);
      return first;
    },
  };
  // The native methods are read-only properties of its prototype: the wrappers become the
  // instance's own.
  try {
    for (const [name, fn] of Object.entries(wrapped)) Object.defineProperty(native, name, { value: fn, configurable: true, writable: true });
  } catch {
    return false;
  }
  return true;
}
