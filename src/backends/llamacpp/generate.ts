// One generation on one context sequence, inside the runner process: tokenize, fit the prompt
// into the context (Ollama's truncate/shift rules), reuse the cached prefix, evaluate with the
// request's sampling options and grammar, decode text incrementally, apply Ollama's stop and
// num_predict rules, shift the context (keeping num_keep tokens) or stop when it is full; with
// `logprobs`, each token's log probability (logprobs.ts) goes out with its text. A sequence with a
// token predictor decodes speculatively (speculative.ts) unless the request uses penalties.
import { LlamaGrammarEvaluationState, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import type { GenerateStats, Logprob } from "../backend.js";
import { EngineError, PROMPT_TOO_LONG } from "../errors.js";
import type { RunnerJob } from "./protocol.js";
import { StopMatcher } from "../stop-matcher.js";
import { grammarCacheFor } from "./grammar.js";
import { tokenLogprob } from "./logprobs.js";
import type { StepGate } from "./step-gate.js";
import { dropProposals, GatedPredictor, predictionCounts } from "./speculative.js";
import { tokenizeText } from "./tokenize-text.js";
import { TrailingWhitespace } from "./trailing-whitespace.js";

const DEFAULT_NUM_KEEP = 4; // Ollama's default num_keep

export function promptTokens(model: LlamaModel, job: RunnerJob): Token[] {
  const body = tokenizeText(model, job.prompt);
  if (job.prefixTokens && job.prefixTokens.length > 0) return [...(job.prefixTokens as Token[]), ...body];
  return withBos(model, body);
}

/** A prompt's tokens with the BOS token first, when the model wants one and the text has none. */
export function withBos(model: LlamaModel, body: Token[]): Token[] {
  const bos = model.tokens.bos;
  return bos != null && model.tokens.shouldPrependBosToken && body[0] !== bos ? [bos, ...body] : body;
}

const controlCache = new WeakMap<LlamaModel, Map<Token, string | undefined>>();

/** The text of a control token (one that decodes to nothing unless special tokens are shown,
 *  such as `<|im_start|>`), undefined for any other; remembered per model. */
function controlTexts(model: LlamaModel): (token: Token) => string | undefined {
  let cache = controlCache.get(model);
  if (!cache) controlCache.set(model, (cache = new Map()));
  const known = cache;
  return (token) => {
    if (known.has(token)) return known.get(token);
    const special = model.detokenize([token], true);
    const text = special !== "" && model.detokenize([token], false) === "" ? special : undefined;
    known.set(token, text);
    return text;
  };
}

/**
 * Whether a token ends the generation. node-llama-cpp also ends on the vocabulary's EOT token,
 * which for harmony (gpt-oss) is `<|end|>`: llama.cpp takes that one out of its end-of-generation
 * set and shows it as text (it ends a message, not the answer; `<|return|>` and `<|call|>` end
 * the answer), so a token llama.cpp shows as `<|end|>` text does not end it here.
 */
function eogJudge(model: LlamaModel): (token: Token) => boolean {
  const shownAsEnd = new Map<Token, boolean>();
  return (token) => {
    if (!model.isEogToken(token)) return false;
    let shown = shownAsEnd.get(token);
    if (shown === undefined) shownAsEnd.set(token, (shown = model.detokenize([token], false) === "<|end|>"));
    return !shown;
  };
}

/** Tokens kept at the start on a shift: num_keep (negative = all), plus the BOS token. */
function keepCount(tokens: readonly Token[], numKeep: number, bos: Token | null | undefined, contextSize: number): number {
  let keep = numKeep < 0 ? tokens.length : numKeep;
  if (bos != null && tokens[0] === bos) keep++;
  return Math.max(0, Math.min(keep, contextSize - 1));
}

/**
 * A prompt that does not fit (more than num_ctx − 1 tokens) keeps its first num_keep tokens and
 * drops the oldest of the rest so that it ends at num_ctx − (num_ctx − num_keep)/2 tokens, as
 * Ollama does; with truncation or context shift off it is an error instead.
 */
export function fitPrompt(
  tokens: Token[],
  contextSize: number,
  opts: { numKeep?: number; shift?: boolean; truncate?: boolean; bos?: Token | null } = {},
): Token[] {
  const fullLimit = contextSize - 1;
  if (tokens.length <= fullLimit) return tokens;
  if (opts.truncate === false || opts.shift === false) throw new EngineError("prompt_too_long", PROMPT_TOO_LONG);
  const keep = keepCount(tokens, opts.numKeep ?? DEFAULT_NUM_KEEP, opts.bos, contextSize);
  const limit = contextSize - Math.max(Math.floor((contextSize - keep) / 2), 1);
  const tail = Math.max(0, limit - keep);
  return [...tokens.slice(0, keep), ...tokens.slice(tokens.length - tail)];
}

function hrNow(): bigint {
  return process.hrtime.bigint();
}

export async function runGeneration(
  model: LlamaModel,
  seq: LlamaContextSequence,
  job: RunnerJob,
  /** The job's prompt as tokens (promptTokens), already computed to choose the slot. */
  prompt: Token[],
  signal: AbortSignal,
  /** Text as it is decided; with `job.logprobs`, the entries of the tokens that made it. */
  onText: (text: string, logprobs?: Logprob[]) => void,
  /** The runner's lockstep (step-gate.ts), this sequence's id in it, and what to do once the
   *  prompt is evaluated (let go of a hold on the other sequences). */
  lockstep?: { gate: StepGate; id: number; onFirstToken?: () => void },
): Promise<GenerateStats> {
  const contextSize = seq.contextSize;
  const bos = model.tokens.bos;
  const grammar = job.grammar ? await grammarCacheFor(model.llama).get(job.grammar) : undefined;
  const tokens = fitPrompt(prompt, contextSize, { numKeep: job.numKeep, shift: job.shift, truncate: job.truncate, bos });
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
  const shiftKeep = keepCount(tokens, job.numKeep ?? DEFAULT_NUM_KEEP, bos, contextSize - 1);
  const predictor = seq.tokenPredictor instanceof GatedPredictor ? seq.tokenPredictor : undefined;
  if (predictor) {
    predictor.enabled = !penalize;
    // What prompt lookup copies from (node-llama-cpp's completion classes hand it the prompt).
    predictor.updateInputTokens(tokens);
  }
  const predictedBefore = predictor?.enabled ? predictionCounts(seq) : undefined;

  const stops = new StopMatcher([...job.stop, ...(grammar?.stops ?? [])]);
  const trailing = grammar ? new TrailingWhitespace() : undefined;
  const output: Token[] = [];
  let pending: Token[] = [];
  let doneReason: "stop" | "length" = "stop";
  let tFirst: bigint | null = null;

  // Log probabilities wait for the text their tokens make and go out with it (tokens whose text
  // a stop sequence or the trailing whitespace swallows have none).
  const top = job.logprobs;
  let logprobs: Logprob[] = [];
  const send = (text: string): void => {
    const t = trailing ? trailing.push(text) : text;
    if (!t) return;
    if (top === undefined) onText(t);
    else {
      onText(t, logprobs);
      logprobs = [];
    }
  };
  const emit = (text: string, control = false): boolean => {
    const step = control ? stops.pushControl(text) : stops.push(text);
    if (step.emit) send(step.emit);
    return step.stopped;
  };
  const controlText = controlTexts(model);
  const endsGeneration = eogJudge(model);

  if (limit > 0) {
    const metadata = { confidence: top !== undefined, probabilities: top !== undefined && top > 0 };
    const gen = seq.evaluateWithMetadata(tokens.slice(keep), metadata, {
      // End-of-generation tokens come through and are judged below (endsGeneration).
      yieldEogToken: true,
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
      grammarEvaluationState: grammar ? new LlamaGrammarEvaluationState({ model, grammar: grammar.grammar }) : undefined,
      // Ollama's shift: keep num_keep (+BOS) tokens, drop half of the rest.
      contextShift: {
        size: (sq) => Math.max(1, Math.floor((sq.contextSize - shiftKeep) / 2)),
        strategy: ({ size }) => [{ start: shiftKeep, end: shiftKeep + size }],
      },
    });
    let stopped = false;
    try {
      for await (const out of gen) {
        // The metadata flags are not literal types, so the output's fields are typed by hand.
        const item = out as { token: Token; confidence?: number; probabilities?: Map<Token, number> };
        const token = item.token;
        if (endsGeneration(token)) break;
        if (tFirst === null) {
          tFirst = hrNow();
          lockstep?.onFirstToken?.();
          lockstep?.gate.join(lockstep.id);
        }
        if (signal.aborted) break;
        if (top !== undefined) logprobs.push(tokenLogprob(model, token, item.confidence, item.probabilities, top, history.slice(-8)));
        output.push(token);
        history.push(token);
        const control = controlText(token);
        if (control !== undefined) {
          // A turn token (not an end-of-generation one: those end it in the engine) is no text
          // of the answer; it ends the answer when it is a stop (Ollama's stop parameters name
          // a family's turn tokens). Text held for UTF-8 before it goes out first.
          const before = pending.length > 0 ? model.detokenize(pending, false, history.slice(-pending.length - 9, -pending.length - 1)) : "";
          pending = [];
          if ((before && emit(before)) || emit(control, true)) {
            stopped = true;
            break;
          }
        } else {
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
        }
        if (output.length >= limit) {
          doneReason = "length";
          break;
        }
        // Without context shift a full context ends the generation.
        if (job.shift === false && seq.nextTokenIndex >= contextSize - 1) {
          doneReason = "length";
          break;
        }
        if (lockstep) await lockstep.gate.arrive(lockstep.id);
      }
    } finally {
      lockstep?.gate.leave(lockstep.id);
      if (predictor?.enabled) await dropProposals(seq);
    }
    if (!stopped && pending.length > 0) emit(model.detokenize(pending, false));
    if (!stopped) {
      const rest = stops.flush();
      if (rest) send(rest);
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
  if (predictedBefore) {
    const now = predictionCounts(seq);
    stats.draftTokens = now.drafted - predictedBefore.drafted;
    stats.draftAccepted = now.accepted - predictedBefore.accepted;
  }
  if (job.wantContext) stats.context = [...tokens, ...output.filter((t) => !model.isEogToken(t))];
  return stats;
}
