// Speculative decoding inside a runner: each slot's sequence gets node-llama-cpp's token
// predictor, which proposes the next tokens so that the model checks several in one batch. With a
// DRAFT model that is a DraftSequenceTokenPredictor on one sequence of the draft's own context per
// slot; without one, with `prompt_lookup`, an InputLookupTokenPredictor (the continuation of the
// last tokens where they occur earlier in the prompt: edits, quotes, code). The model keeps
// choosing every token itself, so greedy output is the same with and without it.
//
// The draft proposes `draftNumPredict` tokens before the model checks them (minTokens = maxTokens):
// a draft that ran on while the model evaluates would have both spinning on the same cores.
import {
  DraftSequenceTokenPredictor,
  InputLookupTokenPredictor,
  TokenPredictor,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type SequenceEvaluateOptions,
  type Token,
} from "node-llama-cpp";
import type { LoadOptions } from "./protocol.js";
import { guardOutputOrder } from "./output-order.js";

type ResetParams = { targetSequence: LlamaContextSequence; stateTokens: Token[]; evaluateOptions: Readonly<SequenceEvaluateOptions> };

/**
 * A predictor that a generation may switch off. node-llama-cpp samples every proposed position
 * with the same repeat-penalty token list (the one before the step), so a request with
 * penalties would not get the tokens it gets without proposals: it runs without them. A sequence
 * keeps its predictor for life (node-llama-cpp binds it at getSequence), hence the switch.
 */
export class GatedPredictor extends TokenPredictor {
  private on = true;

  constructor(private readonly inner: TokenPredictor) {
    super();
  }

  /** Set before a generation starts (node-llama-cpp resets the predictor at each start). */
  set enabled(on: boolean) {
    if (this.on && !on) void this.inner.stop();
    this.on = on;
  }

  get enabled(): boolean {
    return this.on;
  }

  reset(params: ResetParams): Promise<void> | void {
    if (this.on) return this.inner.reset(params);
  }

  pushTokens(tokens: Token[]): void {
    if (this.on) this.inner.pushTokens(tokens);
  }

  predictTokens(): Promise<Token[]> | Token[] {
    return this.on ? this.inner.predictTokens() : [];
  }

  override stop(untilPredictionsExhausted?: boolean): Promise<void> | void {
    return this.inner.stop(untilPredictionsExhausted);
  }

  override updateInputTokens(tokens: Token[]): void {
    if (this.on) this.inner.updateInputTokens(tokens);
  }

  override dispose(): Promise<void> | void {
    return this.inner.dispose();
  }
}

/** What a runner holds for speculative decoding: the draft model and its context, if any. */
export class Speculation {
  private constructor(
    private readonly opts: { draftNumPredict: number; minConfidence?: number },
    private readonly draft?: { model: LlamaModel; context: LlamaContext },
  ) {}

  /** Loads what `opts` asks for (nothing, prompt lookup, or the draft model and its context). */
  static async load(
    llama: Llama,
    opts: LoadOptions,
    context: { contextSize: number; batchSize: number; threads: number; gpuLayers: number },
  ): Promise<Speculation | undefined> {
    const n = opts.draftNumPredict ?? 0;
    if (n <= 0 || opts.embedding || (!opts.draft && opts.promptLookup !== true)) return undefined;
    const settings = { draftNumPredict: n, ...(opts.draftMinConfidence !== undefined ? { minConfidence: opts.draftMinConfidence } : {}) };
    if (!opts.draft) return new Speculation(settings);
    const model = await llama.loadModel({ modelPath: opts.draft, gpuLayers: context.gpuLayers, useMmap: opts.useMmap });
    try {
      // The draft's cache is f16 without flash attention: the daemon plans its memory so
      // (draft-memory.ts), and it is small next to the model's.
      const ctx = await model.createContext({
        contextSize: Math.min(context.contextSize, model.trainContextSize),
        sequences: opts.slots,
        batchSize: context.batchSize,
        threads: context.threads,
        flashAttention: false,
      });
      guardOutputOrder(ctx); // the draft's sequences batch their prompts together too
      return new Speculation(settings, { model, context: ctx });
    } catch (err) {
      await model.dispose();
      throw err;
    }
  }

  /** "draft" or "prompt lookup", for the log. */
  get kind(): string {
    return this.draft ? "draft" : "prompt lookup";
  }

  /** Bytes the draft holds (weights, cache), for the runner's memory report. */
  get draftBytes(): number {
    return this.draft?.model.size ?? 0;
  }

  /** A predictor for the next of the model's sequences (one per sequence, never shared). */
  predictor(): GatedPredictor {
    const n = this.opts.draftNumPredict;
    if (!this.draft) return new GatedPredictor(new InputLookupTokenPredictor({ predictionLength: { min: 1, max: n } }));
    const options = { minTokens: n, maxTokens: n, ...(this.opts.minConfidence !== undefined ? { minConfidence: this.opts.minConfidence } : {}) };
    return new GatedPredictor(new DraftSequenceTokenPredictor(this.draft.context.getSequence(), options));
  }

  async dispose(): Promise<void> {
    await this.draft?.context.dispose();
    await this.draft?.model.dispose();
  }
}

/** Proposals checked and accepted so far on a sequence (node-llama-cpp counts them per sequence). */
export function predictionCounts(seq: LlamaContextSequence): { drafted: number; accepted: number } {
  const p = seq.tokenPredictions;
  return { drafted: p.validated + p.refuted, accepted: p.validated };
}

/**
 * After a generation that stopped early (a stop sequence, num_predict, a client gone), the
 * sequence may hold proposals the model accepted but nobody consumed: cells past its tokens,
 * which a state file of the sequence (prompt cache, slot copies, saves across unloads) would
 * carry and a later load would trip over. node-llama-cpp drops them with any erase, so the last
 * token goes with them (it is evaluated again by the next request that wants it).
 */
export async function dropProposals(seq: LlamaContextSequence): Promise<void> {
  const n = seq.nextTokenIndex;
  if (seq.tokenPredictor && n > 0) await seq.eraseContextTokenRanges([{ start: n - 1, end: n }]);
}
