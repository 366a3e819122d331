// Runner load options for tests that drive a runner directly (no daemon): CPU, f16 cache,
// flash attention off, no adapters; each test states only what it changes.
import type { LoadOptions } from "../../src/backends/llamacpp/protocol.js";

export function testLoadOptions(overrides: Partial<LoadOptions> = {}): LoadOptions {
  return {
    numCtx: 512,
    numBatch: 512,
    numGpu: -1,
    numThread: 0,
    useMmap: undefined,
    slots: 1,
    flashAttention: false,
    kvCacheTypeK: "f16",
    kvCacheTypeV: "f16",
    embedding: false,
    adapters: [],
    ...overrides,
  };
}
