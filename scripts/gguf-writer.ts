// The GGUF writer lives in src/registry/gguf-write.ts (the safetensors converter writes with it too).
export * from "../src/registry/gguf-write.js";
