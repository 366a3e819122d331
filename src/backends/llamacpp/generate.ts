// One generation on one context sequence, inside the runner process: tokenize, reuse the
// cached prefix, evaluate, decode text incrementally, apply Ollama's stop and num_predict rules.
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { GenerateJob, GenerateStats } from "../backend.js";
import { StopMatcher } from "../stop-matcher.js";

const NUM_KEEP = 4; // Ollama's default num_keep: tokens kept at the start when the prompt is cut

export function promptTokens(model: LlamaModel, job: GenerateJob): Token[] {
  const body = model.tokenize(job.prompt, true) as Token[];
  const bos = model.tokens.bos;
  if (job.prefixTokens && job.prefixTokens.length > 0) return [...(job.prefixTokens as Token[]), ...body];
  if (bos != null && model.tokens.shouldPrependBosToken && body[0] !== bos) return [bos, ...body];
  return body;
}

/** A prompt that does not fit keeps its first NUM_KEEP tokens and its most recent half-context. */
export function fitPrompt(tokens: Token[], contextSize: number): Token[] {
  if (tokens.length < contextSize) return tokens;
  const tail = Math.max(1, Math.floor((contextSize - NUM_KEEP) / 2));
  return [...tokens.slice(0, NUM_KEEP), ...tokens.slice(tokens.length - tail)];
}

function hrNow(): bigint {
  return process.hrtime.bigint();
}

export async function runGeneration(
  model: LlamaModel,
  seq: LlamaContextSequence,
  job: GenerateJob,
  signal: AbortSignal,
  onText: (text: string) => void,
): Promise<GenerateStats> {
  const contextSize = seq.contextSize;
  const tokens = fitPrompt(promptTokens(model, job), contextSize);
  const t0 = hrNow();

  // Prompt-prefix reuse: keep what the slot already evaluated, always re-evaluate >= 1 token
  // so the engine has fresh logits to sample from.
  const common = seq.compareContextTokens(tokens).firstDifferentIndex;
  const keep = Math.min(common, tokens.length - 1);
  if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);

  const s = job.sampling;
  const history: Token[] = [...tokens];
  const lastN = s.repeatLastN < 0 ? contextSize : s.repeatLastN;
  const penalize = lastN > 0 && (s.repeatPenalty !== 1 || s.presencePenalty !== 0 || s.frequencyPenalty !== 0);
  const limit = job.numPredict < 0 || job.numPredict > 10 * contextSize ? 10 * contextSize : job.numPredict;

  const stops = new StopMatcher(job.stop);
  const output: Token[] = [];
  let pending: Token[] = [];
  let doneReason: "stop" | "length" = "stop";
  let tFirst: bigint | null = null;

  const emit = (text: string): boolean => {
    const step = stops.push(text);
    if (step.emit) onText(step.emit);
    return step.stopped;
  };

  if (limit > 0) {
    const gen = seq.evaluate(tokens.slice(keep), {
      temperature: s.temperature,
      topK: s.topK,
      topP: s.topP,
      minP: s.minP,
      seed: s.seed < 0 ? Math.floor(Math.random() * 0x7fffffff) : s.seed,
      repeatPenalty: penalize
        ? {
            punishTokens: () => history.slice(-lastN),
            penalty: s.repeatPenalty,
            presencePenalty: s.presencePenalty,
            frequencyPenalty: s.frequencyPenalty,
          }
        : undefined,
    });
    let stopped = false;
    for await (const token of gen) {
      tFirst ??= hrNow();
      if (signal.aborted) break;
      output.push(token);
      history.push(token);
      pending.push(token);
      // Decode with the preceding tokens as context so SPM leading spaces survive; hold back
      // an incomplete UTF-8 sequence (decoded as U+FFFD) until its remaining bytes arrive.
      const text = model.detokenize(pending, false, history.slice(-pending.length - 8, -pending.length));
      if (!text.endsWith("\uFFFD") || pending.length >= 4) {
        pending = [];
        if (emit(text)) {
          stopped = true;
          break;
        }
      }
      if (output.length >= limit) {
        doneReason = "length";
        break;
      }
    }
    if (!stopped && pending.length > 0) emit(model.detokenize(pending, false));
    if (!stopped) {
      const rest = stops.flush();
      if (rest) onText(rest);
    }
  }

  const tEnd = hrNow();
  const first = tFirst ?? tEnd;
  const stats: GenerateStats = {
    doneReason,
    promptEvalCount: tokens.length,
    promptEvalDurationNs: Number(first - t0),
    evalCount: output.length,
    evalDurationNs: Number(tEnd - first),
  };
  if (job.wantContext) stats.context = [...tokens, ...output.filter((t) => !model.isEogToken(t))];
  return stats;
}
