// Property test of structured output: every schema of the corpus (test/fixtures/schema-corpus.ts)
// is compiled by the llama.cpp backend and sampled by the runner's real generation code on the tiny
// random-weight model with several seeds; every output that ends by itself must parse and
// validate against the schema with ajv (+ formats). Random weights make the outputs as
// adversarial as grammar-constrained text gets: long digit runs, escapes, odd whitespace.
import { getLlama, LlamaLogLevel, type Llama, type LlamaContext, type LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { compileLlamaFormat } from "../../src/backends/llamacpp/json-schema.js";
import type { RunnerJob } from "../../src/backends/llamacpp/protocol.js";
import { promptTokens, runGeneration } from "../../src/backends/llamacpp/generate.js";
import { makeValidator } from "../helpers/ajv.js";
import { SCHEMA_CORPUS } from "../fixtures/schema-corpus.js";

const SEEDS = [1, 2, 3, 4, 5, 6];
let llama: Llama;
let model: LlamaModel;
let context: LlamaContext;
const ajv = makeValidator();

beforeAll(async () => {
  // One thread: under a loaded machine, spinning worker threads are what makes tests slow.
  llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error, maxThreads: 1 });
  model = await llama.loadModel({ modelPath: await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }) });
  context = await model.createContext({ contextSize: 1024, sequences: 1 });
}, 60_000);

afterAll(async () => {
  await context?.dispose();
  await model?.dispose();
  await llama?.dispose();
});

async function sample(schema: Record<string, unknown>, seed: number): Promise<{ text: string; done: "stop" | "length" }> {
  const job: RunnerJob = {
    prompt: "<|im_start|>user\nAnswer in JSON.<|im_end|>\n<|im_start|>assistant\n",
    sampling: { temperature: 1, topK: 40, topP: 0.95, minP: 0, seed, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 },
    numPredict: 600,
    stop: [],
    wantContext: false,
    // As a request goes: the backend compiles the schema, the runner parses the grammar.
    grammar: compileLlamaFormat({ kind: "schema", schema }),
  };
  const seq = context.getSequence();
  try {
    let text = "";
    const stats = await runGeneration(model, seq, job, promptTokens(model, job), new AbortController().signal, (t) => (text += t));
    return { text, done: stats.doneReason };
  } finally {
    seq.dispose();
  }
}

export const corpusResults: Array<{ name: string; complete: number; valid: number }> = [];

describe("every output of the corpus validates", () => {
  for (const [name, schema] of Object.entries(SCHEMA_CORPUS)) {
    it(name, async () => {
      const validate = ajv.compile(schema);
      const invalid: string[] = [];
      let complete = 0;
      for (const seed of SEEDS) {
        const out = await sample(schema, seed);
        if (out.done !== "stop") continue; // cut by num_predict: not a whole value
        complete++;
        let value: unknown;
        try {
          value = JSON.parse(out.text);
        } catch {
          invalid.push(`seed ${seed}: not JSON: ${out.text}`);
          continue;
        }
        if (!validate(value)) invalid.push(`seed ${seed}: ${out.text}\n  ${ajv.errorsText(validate.errors)}`);
      }
      corpusResults.push({ name, complete, valid: complete - invalid.length });
      expect(invalid).toEqual([]);
      // A random-weight model may run out of tokens inside an unbounded list or map.
      expect(complete, "some samples end by themselves").toBeGreaterThanOrEqual(2);
    }, 60_000);
  }
  afterAll(() => {
    const rows = corpusResults.map((r) => `| ${r.name} | ${r.complete}/${SEEDS.length} | ${r.valid}/${r.complete} |`);
    console.log(`| schema | complete | valid |\n|---|---|---|\n${rows.join("\n")}`);
  });
});
