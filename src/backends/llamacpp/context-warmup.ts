// One throwaway evaluation when a context is created, as llama.cpp's own tools do at start
// (common_init_from_params: "warming up the model with an empty run"). The first evaluation on
// a new context costs far more than the next ones (1B Q4_0 on 2 cores: one token 67 ms against
// 24 ms after a warm-up, the 100-token prompt after it 551 ms against 466 ms); the warm-up
// itself takes ~85 ms of the load, so even the request that caused the load gains, and one that
// comes after a preload (`ollamats run`, keep-alive) gains all of it. The sequence is cleared
// again: no request ever sees the warm-up's tokens.
import type { LlamaContextSequence, LlamaModel } from "node-llama-cpp";

export async function warmUpContext(model: LlamaModel, seq: LlamaContextSequence): Promise<void> {
  const tokens = [model.tokens.bos, model.tokens.eos].filter((t) => t != null);
  await seq.evaluateWithoutGeneratingNewTokens(tokens.length > 0 ? tokens : [0 as (typeof tokens)[number]]);
  await seq.clearHistory();
}
