// Asks llama.cpp's own grammar engine whether a GBNF grammar accepts a text: the text is fed as
// the test model's byte tokens (`<0xNN>`, ids 5..260 in scripts/test-vocab.ts) through a grammar
// evaluation state, then the end-of-generation token must be allowed. node-llama-cpp exposes the
// two calls this needs only on its bindings, so they are reached through its internal fields.
import { getLlama, LlamaGrammarEvaluationState, LlamaLogLevel, type Llama, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";

interface SamplerBindings {
  canBeNextTokenForGrammarEvaluationState(state: unknown, token: Token): boolean;
  acceptGrammarEvaluationStateToken(state: unknown, token: Token): void;
}

const FIRST_BYTE_TOKEN = 5;
const EOS = 2 as Token;

export class GrammarOracle {
  private readonly bindings: SamplerBindings;

  constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
  ) {
    this.bindings = (llama as unknown as { _bindings: { AddonSampler: SamplerBindings } })._bindings.AddonSampler;
  }

  async grammar(text: string): Promise<LlamaGrammar> {
    return this.llama.createGrammar({ grammar: text });
  }

  /** Whether the grammar generates exactly `text`. */
  accepts(grammar: LlamaGrammar, text: string): boolean {
    const state = (new LlamaGrammarEvaluationState({ model: this.model, grammar }) as unknown as { _state: unknown })._state;
    for (const byte of Buffer.from(text, "utf8")) {
      const token = (FIRST_BYTE_TOKEN + byte) as Token;
      if (!this.bindings.canBeNextTokenForGrammarEvaluationState(state, token)) return false;
      this.bindings.acceptGrammarEvaluationStateToken(state, token);
    }
    return this.bindings.canBeNextTokenForGrammarEvaluationState(state, EOS);
  }

  /** The longest start of `text` that the grammar generates whole (undefined: none, not even ""). */
  longestAccepted(grammar: LlamaGrammar, text: string): string | undefined {
    const state = (new LlamaGrammarEvaluationState({ model: this.model, grammar }) as unknown as { _state: unknown })._state;
    const bytes = Buffer.from(text, "utf8");
    let last = this.bindings.canBeNextTokenForGrammarEvaluationState(state, EOS) ? 0 : -1;
    for (let i = 0; i < bytes.length; i++) {
      const token = (FIRST_BYTE_TOKEN + bytes[i]!) as Token;
      if (!this.bindings.canBeNextTokenForGrammarEvaluationState(state, token)) break;
      this.bindings.acceptGrammarEvaluationStateToken(state, token);
      if (this.bindings.canBeNextTokenForGrammarEvaluationState(state, EOS)) last = i + 1;
    }
    return last === -1 ? undefined : bytes.subarray(0, last).toString("utf8");
  }
}

/** An oracle on the tiny test model for the tests of this file: made before them, disposed after. */
export function testGrammarOracle(): { readonly oracle: GrammarOracle } {
  const holder: { oracle?: GrammarOracle } = {};
  let llama: Llama | undefined;
  let model: LlamaModel | undefined;
  beforeAll(async () => {
    llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error, maxThreads: 1 });
    model = await llama.loadModel({ modelPath: await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }) });
    holder.oracle = new GrammarOracle(llama, model);
  }, 60_000);
  afterAll(async () => {
    await model?.dispose();
    await llama?.dispose();
  });
  return {
    get oracle() {
      if (!holder.oracle) throw new Error("the grammar oracle is made in beforeAll");
      return holder.oracle;
    },
  };
}
