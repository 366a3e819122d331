// Worker thread of quantize-pool.ts: encodes chunks of weights into ggml blocks off the daemon's
// event loop (a K-quant chunk of a million weights is ~0.3 s of arithmetic).
import { parentPort } from "node:worker_threads";
import { encode, type EncodeTarget } from "./ggml-encode.js";
import { TENSOR_TYPES } from "./quantize-plan.js";

export interface EncodeJob {
  id: number;
  type: EncodeTarget;
  floats: Float32Array;
}

export type EncodeReply = { id: number; bytes: Uint8Array } | { id: number; error: string };

/** The blocks of `floats` (a whole number of blocks) as `type`. */
export function encodeChunk(type: EncodeTarget, floats: Float32Array): Buffer {
  const [, block, bytes] = TENSOR_TYPES[type];
  const out = Buffer.from(new ArrayBuffer((floats.length / block) * bytes));
  encode(type, floats, floats.length, out);
  return out;
}

parentPort?.on("message", (job: EncodeJob) => {
  try {
    const out = encodeChunk(job.type, job.floats);
    parentPort?.postMessage({ id: job.id, bytes: out } satisfies EncodeReply, [out.buffer as ArrayBuffer]);
  } catch (err) {
    parentPort?.postMessage({ id: job.id, error: String((err as Error)?.message ?? err) } satisfies EncodeReply);
  }
});
