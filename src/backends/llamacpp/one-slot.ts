// Architectures a runner serves one sequence at a time, whatever OLLAMA_NUM_PARALLEL says.
// - Ollama's own list (server/sched.go: "some architectures are not safe with num_parallel > 1").
// - Every architecture whose memory is a recurrent state (Mamba, RWKV) or has one beside its
//   attention (Jamba, Falcon-H1, Granite 4, LFM2, Qwen3-Next): with several sequences in one
//   context, llama.cpp's per-sequence states mixed. Measured with plain node-llama-cpp 3.21.1 on
//   a CPU where it picks its sapphirerapids build (AMX, AVX-512 FP16): a Mamba or Jamba model
//   with F16, Q8_0 or Q4_0 weights and 4 sequences answered 3 of 4 prompts unlike one sequence
//   does, differently on each run, and a runner died of SIGSEGV; F32 weights, other CPU builds
//   and attention-only models answered alike.

const ONE_SLOT = new Set([
  // Ollama's (by model family)
  "mllama", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "qwen3next", "lfm2", "lfm2moe", "nemotron_h", "nemotron_h_moe", "nemotron_h_omni",
  // recurrent, and hybrid (llama.cpp's llm_arch_is_recurrent / llm_arch_is_hybrid)
  "mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "jamba", "falcon-h1", "plamo2", "granitehybrid", "kimi-linear",
]);

/** Whether a model of this architecture (or family) gets one sequence per runner. */
export function oneSlotOnly(...names: ReadonlyArray<string | undefined>): boolean {
  return names.some((n) => n !== undefined && ONE_SLOT.has(n.toLowerCase()));
}
