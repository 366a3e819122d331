// `ollamats serve` (alias `start`): run the daemon in the foreground. The daemon's modules are
// imported only here, so every other command starts without loading them.
import { setFlagsFromString } from "node:v8";
import type { CommandModule } from "yargs";
import { action, cliConfig } from "../connect.js";

export const ServeCommand: CommandModule<object, object> = {
  command: "serve",
  aliases: ["start"],
  describe: "Start ollamats",
  builder: (yargs) =>
    yargs.epilogue(
      "Environment Variables:\n" +
        "      OLLAMA_DEBUG                  Show additional debug information (e.g. OLLAMA_DEBUG=1)\n" +
        "      OLLAMA_HOST                   IP Address for the ollama server (default 127.0.0.1:11434)\n" +
        "      OLLAMA_CONTEXT_LENGTH         Context length to use unless otherwise specified\n" +
        "      OLLAMA_KEEP_ALIVE             The duration that models stay loaded in memory (default \"5m\")\n" +
        "      OLLAMA_MAX_LOADED_MODELS      Maximum number of loaded models per GPU\n" +
        "      OLLAMA_MAX_QUEUE              Maximum number of queued requests\n" +
        "      OLLAMA_MODELS                 The path to the models directory\n" +
        "      OLLAMA_NUM_PARALLEL           Maximum number of parallel requests\n" +
        "      OLLAMA_NOPRUNE                Do not prune model blobs on startup\n" +
        "      OLLAMA_ORIGINS                A comma separated list of allowed origins\n" +
        "      OLLAMA_SCHED_SPREAD           Always schedule model across all GPUs\n" +
        "      OLLAMA_FLASH_ATTENTION        Enabled flash attention\n" +
        "      OLLAMA_KV_CACHE_TYPE          Quantization type for the K/V cache (default: f16)\n" +
        "      OLLAMA_GPU_OVERHEAD           Reserve a portion of VRAM per GPU (bytes)\n" +
        "      OLLAMA_LOAD_TIMEOUT           How long to allow model loads to stall before giving up (default \"5m\")\n" +
        "      OLLAMA_API_KEYS               Comma separated API keys; requests then need Authorization: Bearer <key>\n" +
        "      OLLAMA_API_KEYS_FILE          File of API keys, one per line, optional scope all or inference (mode 600)\n" +
        "      OLLAMA_NO_MANAGEMENT          Serve inference only: refuse pull, push, create, copy, delete and blobs",
    ),
  handler: action(async () => {
    const config = cliConfig();
    // A daemon mostly waits: its young generation stays at its initial size instead of growing
    // to 16 MB semi-spaces during a multi-GB upload or pull and staying there (measured: idle RSS
    // after creating the 622 MB bench model 105 → 90 MB). Set at run time, it applies from the
    // next growth on; nothing on the token path allocates enough to notice.
    setFlagsFromString("--semi-space-growth-factor=1");
    // A request's path (parse, resolve, schedule, stream) runs once per request: with V8's default
    // budget it is optimised only after ~800 requests. An eighth of it gets there in ~300: first
    // byte through a remote model 1.5 ms over its upstream instead of 1.9 ms once warm (2.2 vs 2.8
    // over requests 200–400); the first ~200 requests pay for the earlier compiles (4.0 vs 3.2).
    // V8 12 (Node 22) counts invocations instead and has no such flag: set there, V8 would print
    // "unrecognized flag" on every start.
    if (v8Major() < 12) setFlagsFromString("--interrupt-budget=8192");
    // a models directory that cannot be used stops the start, not the first pull or create
    const { checkModelsDir } = await import("../../registry/models-dir.js");
    await checkModelsDir(config.models);
    const { serveForever } = await import("../../daemon/serve.js");
    await serveForever(config);
  }),
};

/** V8's major version (11 on Node 20, 12 on Node 22, 13 on Node 24). */
function v8Major(): number {
  return Number.parseInt(process.versions.v8, 10);
}
