// Hostile config.json, tokenizer file and adapter_config.json values (negative, huge, fractional,
// wrong types, malformed rope tables and vocabularies) for the architectures the converters know: each must be planned
// or refused with a ConvertError (a 400 that names the problem), never fail with a TypeError or
// RangeError (a 500) halfway through.
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { makeTestAdapter } from "../../scripts/make-test-adapter.js";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { readGgufInfo } from "../../src/registry/gguf.js";
import { planAdapterConversion } from "../../src/registry/hf-adapter.js";
import { planConversion } from "../../src/registry/hf-convert.js";
import { ConvertError } from "../../src/registry/hf-source.js";
import { exportHfModel, exportLoraAdapter } from "../helpers/hf-export.js";
import { exportHfBert } from "../helpers/hf-export-bert.js";

let home: string | undefined;
afterAll(async () => {
  if (home) await rm(home, { recursive: true, force: true });
});

/** A directory's files by name, as a create request names its blobs. */
async function filesOf(dir: string): Promise<Map<string, string>> {
  return new Map((await readdir(dir)).map((n) => [n, path.join(dir, n)]));
}

const VALUES: unknown[] = [-1, 0, 1, 3, 1e9, 2 ** 53, 1.5, 1e308, "x", null, [], {}, true, [1, "a"], { a: 1 }];

async function planned(plan: () => Promise<unknown>, label: string, bad: string[]): Promise<void> {
  try {
    await plan();
  } catch (e) {
    if (!(e instanceof ConvertError)) bad.push(`${label}: ${String(e)}`);
  }
}

it("config.json: every value of every key is planned or refused with a ConvertError", async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "ollamats-convert-fuzz-"));
  const bad: string[] = [];
  const kinds = [{ arch: "llama", experts: 4 }, { arch: "phi3", template: "phi3" }, { arch: "gemma3", template: "gemma" }, { arch: "qwen3", experts: 4 }, { arch: "qwen2" }] as const;
  const extra: unknown[] = [
    { type: "longrope", long_factor: [1], short_factor: [1] },
    { type: "longrope", long_factor: Array(16).fill(1), short_factor: "x" },
    { rope_type: "llama3", factor: -1 },
    { type: "yarn", factor: 1e9 },
    { full_attention: { rope_theta: "a" }, sliding_attention: null },
  ];
  for (const [i, kind] of kinds.entries()) {
    const dir = path.join(home, `m${i}`);
    await exportHfModel(await makeTestModel({ shape: "tiny", type: "F16", seed: 20 + i, tokenizer: "gpt2", ...kind }), dir, 1);
    const base = JSON.parse(await readFile(path.join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    const keys = [...Object.keys(base), "num_local_experts", "num_experts", "moe_intermediate_size", "partial_rotary_factor", "rope_scaling", "rope_parameters", "sliding_window_pattern", "layer_types", "head_dim"];
    const files = await filesOf(dir);
    for (const k of keys) {
      for (const v of [...VALUES, ...extra]) {
        await writeFile(path.join(dir, "config.json"), JSON.stringify({ ...base, [k]: v }));
        await planned(() => planConversion(files), `${kind.arch} ${k}=${JSON.stringify(v)}`, bad);
      }
    }
  }
  expect(bad).toEqual([]);
}, 120_000);

it("tokenizer files: every value of every key of tokenizer_config.json, generation_config.json and tokenizer.json is planned or refused with a ConvertError", async () => {
  home ??= await mkdtemp(path.join(os.tmpdir(), "ollamats-convert-fuzz-"));
  const bad: string[] = [];
  for (const tokenizer of ["gpt2", "spm"] as const) {
    const dir = path.join(home, `t-${tokenizer}`);
    await exportHfModel(await makeTestModel({ shape: "tiny", type: "F16", seed: 30, tokenizer }), dir, 1);
    const files = await filesOf(dir);
    const docs: Record<string, Record<string, unknown>> = {
      "tokenizer_config.json": { bos_token: "<s>", eos_token: { content: "</s>" }, add_bos_token: true, chat_template: "x", added_tokens_decoder: { "5": { content: "<x>", special: true } }, unk_token: "<unk>", pad_token: "<pad>" },
      "generation_config.json": { eos_token_id: [1, 2], bos_token_id: 1 },
    };
    if (files.has("tokenizer.json")) docs["tokenizer.json"] = JSON.parse(await readFile(files.get("tokenizer.json")!, "utf8")) as Record<string, unknown>;
    for (const [name, doc] of Object.entries(docs)) {
      const file = path.join(dir, name);
      files.set(name, file);
      const original = existsSync(file) ? await readFile(file) : undefined;
      for (const k of [...Object.keys(doc), "model", "added_tokens", "pre_tokenizer"]) {
        for (const v of [...VALUES, [{ id: -1, content: 5 }], [{ id: 1e9, content: "x" }], { type: "BPE", vocab: { a: -5 }, merges: [[1, 2]] }, { type: "WordPiece" }, [{ name: "x", content: "y" }]]) {
          await writeFile(file, JSON.stringify({ ...doc, [k]: v }));
          await planned(() => planConversion(files), `${tokenizer} ${name} ${k}=${JSON.stringify(v)}`, bad);
        }
      }
      if (original) await writeFile(file, original);
    }
  }
  expect(bad).toEqual([]);
}, 120_000);

it("a BERT checkpoint: every value of every key of config.json, modules.json, its Pooling config and the WordPiece tokenizer files is planned or refused with a ConvertError", async () => {
  home ??= await mkdtemp(path.join(os.tmpdir(), "ollamats-convert-fuzz-"));
  const bad: string[] = [];
  const dir = path.join(home, "bert");
  await exportHfBert(await makeTestModel({ arch: "bert", type: "F16", seed: 21 }), dir, { pooling: "mean" });
  const files = await filesOf(dir);
  files.set("1_Pooling/config.json", path.join(dir, "1_Pooling", "config.json"));
  expect((await planConversion(files)).tensors.length).toBe(5 + 2 * 16); // the untouched checkpoint plans
  for (const name of ["config.json", "modules.json", "1_Pooling/config.json", "tokenizer.json", "tokenizer_config.json"]) {
    const file = files.get(name)!;
    const original = await readFile(file);
    const doc = JSON.parse(original.toString("utf8")) as Record<string, unknown>;
    const keys = Array.isArray(doc) ? ["0", "1", "2"] : [...Object.keys(doc), "type_vocab_size", "continuing_subword_prefix", "post_processor"];
    for (const k of keys) {
      for (const v of [...VALUES, { type: "WordPiece", vocab: { a: -1 } }, { type: "WordPiece", vocab: { "##": 0 } }, { type: "sentence_transformers.models.Pooling", path: "../x" }, { cls: [5, 1], sep: "x" }]) {
        await writeFile(file, JSON.stringify(Array.isArray(doc) ? Object.assign([...doc], { [k]: v }) : { ...doc, [k]: v }));
        await planned(() => planConversion(files), `bert ${name} ${k}=${JSON.stringify(v)}`, bad);
      }
    }
    for (const v of VALUES) {
      await writeFile(file, JSON.stringify(v));
      await planned(() => planConversion(files), `bert ${name}=${JSON.stringify(v)}`, bad);
    }
    await writeFile(file, original);
  }
  expect(bad).toEqual([]);
}, 120_000);

it("adapter_config.json: every value of every key is planned or refused with a ConvertError", async () => {
  home ??= await mkdtemp(path.join(os.tmpdir(), "ollamats-convert-fuzz-"));
  const bad: string[] = [];
  const base = await readGgufInfo(await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }));
  const config = { peft_type: "LORA", r: 4, lora_alpha: 4, use_rslora: false, use_dora: false, fan_in_fan_out: false, alpha_pattern: {}, rank_pattern: {}, lora_parameters: { rank: 4, scale: 1 }, fine_tune_type: "lora" };
  for (const format of ["peft", "mlx"] as const) {
    const dir = path.join(home, `a-${format}`);
    await exportLoraAdapter(await makeTestAdapter({ seed: 1 }), dir, format, { q: 2, kv: 1 }, config);
    const files = await filesOf(dir);
    for (const k of Object.keys(config)) {
      for (const v of [...VALUES, { "(": 2 }, { ".*": -3 }, { scale: "x" }, { scale: -1 }]) {
        await writeFile(path.join(dir, "adapter_config.json"), JSON.stringify({ ...config, [k]: v }));
        await planned(() => planAdapterConversion(files, base), `${format} ${k}=${JSON.stringify(v)}`, bad);
      }
    }
  }
  expect(bad).toEqual([]);
}, 120_000);
