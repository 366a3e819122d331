// The LlamaIndex compatibility tests, unchanged, against remote models (test/compat/helpers.ts):
// every model is served by a second daemon over Ollama's API.
process.env.OLLAMATS_COMPAT_REMOTE = "1";
await import("../compat/llamaindex.test.js");
