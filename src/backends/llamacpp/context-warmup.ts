// One throwaway generation when a context is created, as llama.cpp's own tools do at start
// (common_init_from_params: "warming up the model with an empty run"). The first evaluation on
// a new context costs far more than the next ones (1B Q4_0 on 2 cores: one token 67 ms against
// 24 ms after a warm-up, the 100-token prompt after it 551 ms against 466 ms); the warm-up
// itself takes ~85 ms of the load, so even the request that caused the load gains, and one that
// comes after a preload (`ollamats run`, keep-alive) gains all of it.
//
// It goes through the request path itself (runGeneration: a sampled token, its text, the stop
// rules) after tokenizing a paragraph, not through a bare evaluation: a runner process runs that
// JavaScript (node-llama-cpp's sampler and generation loop, our tokenizer and text handling) for
// the first time on its first request otherwise, unoptimized. Measured on the 1B model after a
// model switch, with the slot's 1,000-token prefix restored: the first request's one-token
// evaluation took 36-59 ms and its tokenization 5.6 ms after a bare warm-up, 23-36 ms and 1.9 ms
// after this one, at the same load time. The sequence is cleared again: no request ever sees the
// warm-up's tokens.
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { runGeneration } from "./generate.js";
import type { RunnerJob } from "./protocol.js";
import { tokenizeText } from "./tokenize-text.js";

/** Long enough to be tokenized in pieces, as a long prompt is (tokenize-text.ts). */
const WARM_TEXT = "The quick brown fox jumps over the lazy dog, then rests. ".repeat(40);

const WARM_JOB: RunnerJob = {
  prompt: "",
  sampling: { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, seed: 1, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 },
  numPredict: 1,
  stop: [],
  wantContext: false,
};

export async function warmUpContext(model: LlamaModel, seq: LlamaContextSequence): Promise<void> {
  tokenizeText(model, WARM_TEXT);
  const special = [model.tokens.bos, model.tokens.eos].filter((t): t is Token => t != null);
  const tokens = special.length > 0 ? special : [0 as Token];
  try {
    await runGeneration(model, seq, WARM_JOB, tokens, new AbortController().signal, () => undefined);
  } finally {
    await seq.clearHistory();
  }
}
