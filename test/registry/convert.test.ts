// `create` from a Hugging Face safetensors directory: generated GGUF test models are exported as
// transformers would save them (hf-export.ts) and created back, through the API and through the
// CLI's `FROM ./dir`. The converted model must have the original's tensors byte for byte, and
// answer exactly as the original does; bad directories get a 400 that says what is wrong.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { readGgufInfo } from "../../src/registry/gguf.js";
import { CLI, createModelFromFile, sha256File, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { halfBits } from "../../src/registry/ggml-half.js";
import { tensorsOf } from "../helpers/gguf-tensors.js";
import { exportHfModel, f16ToBf16, writeSafetensors } from "../helpers/hf-export.js";
import { readSafetensors } from "../../src/registry/safetensors.js";
import { ndjson, postJson, verifyBlobs } from "../helpers/registry.js";

const exec = promisify(execFile);
let d: TestDaemon;
let home: string;

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "ollamats-convert-"));
  d = await startDaemon({ HOME: home });
}, 60_000);
afterAll(async () => {
  await d?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

async function uploadDir(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(dir)) {
    const file = path.join(dir, name);
    const digest = await sha256File(file);
    const r = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(file) });
    expect([200, 201]).toContain(r.status);
    files[name] = digest;
  }
  return files;
}

async function weightsPath(model: string): Promise<string> {
  const m = JSON.parse(await readFile(path.join(d.models, "manifests", "registry.ollama.ai", "library", model, "latest"), "utf8")) as { layers: Array<{ mediaType: string; digest: string }> };
  const digest = m.layers.find((l) => l.mediaType === "application/vnd.ollama.image.model")!.digest;
  return path.join(d.models, "blobs", digest.replace(":", "-"));
}

async function answer(model: string, prompt: string): Promise<{ response: string; prompt_eval_count: number }> {
  const r = await postJson(`${d.url}/api/generate`, { model, prompt, stream: false, options: { temperature: 0, num_predict: 24, seed: 1 } });
  expect(r.status).toBe(200);
  const j = (await r.json()) as { response: string; prompt_eval_count: number };
  return { response: j.response, prompt_eval_count: j.prompt_eval_count };
}

const CASES = [
  { label: "Llama, byte-level BPE tokenizer.json", opts: { shape: "small", type: "F16", seed: 5, tokenizer: "gpt2" } },
  { label: "Llama, SentencePiece tokenizer.model", opts: { shape: "tiny", type: "F16", seed: 6, tokenizer: "spm" } },
  { label: "Qwen2 with attention biases, tied output", opts: { shape: "tiny", type: "F16", seed: 7, tokenizer: "gpt2", arch: "qwen2", tied: true } },
  { label: "Qwen3 with per-head query/key norms", opts: { shape: "small", type: "F16", seed: 9, tokenizer: "gpt2", arch: "qwen3" } },
  // Gemma's norms are stored as w for a scale of 1 + w: the converter adds the 1 back
  { label: "Gemma, SentencePiece", opts: { shape: "tiny", type: "F16", seed: 10, tokenizer: "spm", template: "gemma", arch: "gemma" } },
  { label: "Gemma 2 with post norms and soft-capping", opts: { shape: "tiny", type: "F16", seed: 11, tokenizer: "spm", template: "gemma", arch: "gemma2" } },
  { label: "Gemma 3 with query/key and post norms, BPE", opts: { shape: "tiny", type: "F16", seed: 12, tokenizer: "gpt2", template: "gemma", arch: "gemma3" } },
  // a mixture of experts: each expert's matrices come stacked into one tensor per layer and kind
  { label: "Mixtral: Llama with 4 experts", opts: { shape: "tiny", type: "F16", seed: 14, tokenizer: "gpt2", arch: "llama", experts: 4 } },
  { label: "Qwen3-MoE with 4 experts", opts: { shape: "tiny", type: "F16", seed: 15, tokenizer: "gpt2", arch: "qwen3", experts: 4 } },
  { label: "Phi-3 with fused q/k/v and gate/up matrices", opts: { shape: "tiny", type: "F16", seed: 13, tokenizer: "spm", template: "phi3", arch: "phi3" } },
] as const;

describe("create from a safetensors directory", () => {
  for (const [i, c] of CASES.entries()) {
    it(`${c.label}: the original's tensors byte for byte, and the same answers`, async () => {
      const gguf = await makeTestModel(c.opts as Parameters<typeof makeTestModel>[0]);
      const dir = path.join(home, `hf-${i}`);
      await exportHfModel(gguf, dir, 2);
      const r = await postJson(`${d.url}/api/create`, { model: `conv-${i}`, files: await uploadDir(dir) });
      expect(r.status).toBe(200);
      const statuses = (await ndjson(r)).map((l) => l.status);
      expect(statuses).toContain("converting model");
      expect(statuses.slice(-2)).toEqual(["writing manifest", "success"]);
      expect((await createModelFromFile(d.url, `orig-${i}`, gguf)).status).toBe(200);

      expect(await tensorsOf(await weightsPath(`conv-${i}`))).toEqual(await tensorsOf(gguf));
      // and the architecture's hyperparameters (windows, soft caps, head sizes) the original has
      const [mo, mc] = [(await readGgufInfo(gguf)).metadata, (await readGgufInfo(await weightsPath(`conv-${i}`))).metadata];
      const arch = String(mo["general.architecture"]);
      const keys = Object.keys(mo).filter((k) => k.startsWith(`${arch}.`) && k !== `${arch}.rope.dimension_count`);
      expect(keys.length).toBeGreaterThanOrEqual(9);
      expect(Object.fromEntries(keys.map((k) => [k, mc[k]]))).toEqual(Object.fromEntries(keys.map((k) => [k, mo[k]])));
      for (const prompt of ["Once upon a time", "The answer is"]) expect(await answer(`conv-${i}`, prompt)).toMatchObject(await answer(`orig-${i}`, prompt));
      // the chat template came along: a chat renders and tokenizes as the original's
      const chat = async (model: string) => {
        const res = await postJson(`${d.url}/api/chat`, { model, stream: false, messages: [{ role: "user", content: "hello there" }], options: { temperature: 0, num_predict: 8 } });
        const j = (await res.json()) as { message: { content: string }; prompt_eval_count: number };
        return { content: j.message.content, prompt_eval_count: j.prompt_eval_count };
      };
      expect(await chat(`conv-${i}`)).toMatchObject(await chat(`orig-${i}`));
    }, 120_000);
  }

  it("Phi-3's LongRoPE: the factors as rope_factors_long/short with their attention factor; a wrong count is a 400", async () => {
    const gguf = await makeTestModel({ shape: "tiny", type: "F16", seed: 13, tokenizer: "spm", template: "phi3", arch: "phi3" });
    const dir = path.join(home, "hf-longrope");
    await exportHfModel(gguf, dir, 1);
    const config = JSON.parse(await readFile(path.join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    const long = Array.from({ length: 16 }, (_, i) => 1 + i / 4); // head size 32: 16 rotary pairs
    const short = Array.from({ length: 16 }, (_, i) => 1 + i / 64);
    const write = (factors: number[]) =>
      writeFile(path.join(dir, "config.json"), JSON.stringify({ ...config, max_position_embeddings: 16384, original_max_position_embeddings: 4096, rope_scaling: { type: "longrope", long_factor: factors, short_factor: short } }));
    await write(long);
    const r = await postJson(`${d.url}/api/create`, { model: "conv-longrope", files: await uploadDir(dir), stream: false });
    expect(r.status, await r.clone().text()).toBe(200);
    const file = await weightsPath("conv-longrope");
    const info = await readGgufInfo(file);
    expect(info.metadata["phi3.rope.scaling.attn_factor"]).toBeCloseTo(Math.sqrt(1 + Math.log(4) / Math.log(4096)), 6);
    expect([info.metadata["phi3.context_length"], info.metadata["phi3.rope.scaling.original_context_length"]]).toEqual([16384, 4096]);
    const bytes = await readFile(file);
    for (const [name, want] of [["rope_factors_long.weight", long], ["rope_factors_short.weight", short]] as const) {
      const t = info.tensors.find((x) => x.name === name)!;
      expect([t.typeName, t.dims]).toEqual(["F32", [16]]);
      expect(Array.from(new Float32Array(bytes.buffer.slice(bytes.byteOffset + info.dataOffset + t.offset, bytes.byteOffset + info.dataOffset + t.offset + t.bytes)))).toEqual(want.map(Math.fround));
    }
    expect((await answer("conv-longrope", "Once upon a time")).response.length).toBeGreaterThan(0);
    await write(long.slice(1));
    const bad = await postJson(`${d.url}/api/create`, { model: "conv-longrope-bad", files: await uploadDir(dir), stream: false });
    expect({ status: bad.status, error: ((await bad.json()) as { error: string }).error }).toEqual({ status: 400, error: "config.json: rope_scaling.long_factor needs 16 numbers" });
  });

  it("bfloat16 weights become F16: each value is the F16 of its bfloat16 value, and the model answers", async () => {
    const gguf = await makeTestModel({ shape: "tiny", type: "F16", seed: 8, tokenizer: "gpt2" });
    const dir = path.join(home, "hf-bf16");
    await exportHfModel(gguf, dir, 1, true);
    const r = await postJson(`${d.url}/api/create`, { model: "conv-bf16", files: await uploadDir(dir), stream: false });
    expect(r.status).toBe(200);
    const info = await readGgufInfo(gguf);
    const out = await weightsPath("conv-bf16");
    const outInfo = await readGgufInfo(out);
    const [src, dst] = [await readFile(gguf), await readFile(out)];
    for (const name of ["token_embd.weight", "blk.0.ffn_down.weight", "blk.1.attn_output.weight"]) {
      const a = info.tensors.find((t) => t.name === name)!;
      const b = outInfo.tensors.find((t) => t.name === name)!;
      expect(b.typeName).toBe("F16");
      const orig = src.subarray(info.dataOffset + a.offset, info.dataOffset + a.offset + a.bytes);
      const want = Buffer.alloc(orig.length);
      const bf = f16ToBf16(Buffer.from(orig));
      for (let i = 0; i < bf.length; i += 2) want.writeUInt16LE(halfBits(new Float32Array(new Uint32Array([bf.readUInt16LE(i) << 16]).buffer)[0]!), i);
      expect(dst.subarray(outInfo.dataOffset + b.offset, outInfo.dataOffset + b.offset + b.bytes).equals(want)).toBe(true);
      expect(want.equals(orig)).toBe(false); // bfloat16 did round: the check is not vacuous
    }
    expect((await answer("conv-bf16", "Once upon a time")).response.length).toBeGreaterThan(0);
  }, 120_000);

  it("through the CLI: `FROM ./dir` uploads the directory, converts and quantizes it; `--experimental` in the directory too", async () => {
    const gguf = await makeTestModel({ shape: "small", type: "F16", seed: 5, tokenizer: "gpt2" });
    const dir = path.join(home, "hf-cli");
    await exportHfModel(gguf, dir, 1);
    await writeFile(path.join(home, "Modelfile"), "FROM ./hf-cli\nPARAMETER temperature 0\n");
    const { stdout, stderr } = await exec(process.execPath, [CLI, "create", "conv-cli", "-q", "q8_0", "-f", path.join(home, "Modelfile")], { env: d.env, timeout: 120_000 });
    expect(stdout + stderr).toMatch(/converting model/);
    expect(stdout + stderr).toMatch(/quantizing F16 model to Q8_0/);
    const s = (await (await postJson(`${d.url}/api/show`, { model: "conv-cli" })).json()) as { details: { quantization_level: string; family: string } };
    expect(s.details).toMatchObject({ quantization_level: "Q8_0", family: "llama" });
    expect((await answer("conv-cli", "Once upon a time")).response.length).toBeGreaterThan(0);
    // Ollama's way for safetensors: `create NAME --experimental` inside the directory (FROM .)
    const exp = await exec(process.execPath, [CLI, "create", "conv-exp", "--experimental"], { env: d.env, cwd: dir, timeout: 120_000 });
    expect(exp.stdout + exp.stderr).toMatch(/converting model[\s\S]*success/);
    const e = (await (await postJson(`${d.url}/api/show`, { model: "conv-exp" })).json()) as { details: { quantization_level: string; family: string } };
    expect(e.details).toMatchObject({ quantization_level: "F16", family: "llama" });
    await verifyBlobs(d.models);
  }, 180_000);
});

describe("a directory that cannot be converted gets a 400 that says why", () => {
  // name → local file; each create uploads its files first (a refused create drops its uploads)
  let good: Record<string, string>;
  let dir: string;
  beforeAll(async () => {
    dir = path.join(home, "hf-bad");
    await exportHfModel(await makeTestModel({ shape: "tiny", type: "F16", seed: 6, tokenizer: "gpt2" }), dir, 1);
    good = Object.fromEntries((await readdir(dir)).map((n) => [n, path.join(dir, n)]));
  }, 60_000);

  const refuse = async (local: Record<string, string>, error: RegExp) => {
    const files: Record<string, string> = {};
    for (const [name, file] of Object.entries(local)) {
      const digest = await sha256File(file);
      expect((await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(file) })).status).toBeLessThan(300);
      files[name] = digest;
    }
    const r = await postJson(`${d.url}/api/create`, { model: "bad", files, stream: false });
    const body = (await r.json()) as { error: string };
    expect({ status: r.status, error: body.error }).toMatchObject({ status: 400, error: expect.stringMatching(error) });
  };
  const file = async (name: string, content: string | Buffer) => {
    const f = path.join(home, `bad-${name}`);
    await writeFile(f, content);
    return f;
  };
  const shard = () => Object.keys(good).find((n) => n.endsWith(".safetensors"))!;

  it("an architecture it does not convert, or no config.json", async () => {
    await refuse({ ...good, "config.json": await file("config.json", JSON.stringify({ architectures: ["GPT2LMHeadModel"] })) }, /^unsupported architecture "GPT2LMHeadModel": ollamats converts LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, BertModel, BertForMaskedLM; convert other models to GGUF with llama\.cpp's convert_hf_to_gguf\.py$/);
    const { ["config.json"]: _drop, ...noConfig } = good;
    await refuse(noConfig, /^config\.json is missing/);
  });

  it("a safetensors header that lies about where its data is, or a dtype it cannot read", async () => {
    const real = await readFile(good[shard()]!);
    const n = Number(real.readBigUInt64LE(0));
    const header = JSON.parse(real.subarray(8, 8 + n).toString()) as Record<string, object>;
    const withHeader = (h: object) => {
      const json = Buffer.from(JSON.stringify(h));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      return Buffer.concat([len, json, real.subarray(8 + n)]);
    };
    const first = Object.keys(header).find((k) => k !== "__metadata__")!;
    await refuse({ ...good, [shard()]: await file("lie.safetensors", withHeader({ ...header, [first]: { ...header[first], data_offsets: [0, 2 ** 40] } })) }, /data outside the file/);
    await refuse({ ...good, [shard()]: await file("i8.safetensors", withHeader({ ...header, [first]: { ...header[first], dtype: "I8" } })) }, /has dtype I8; only F32, F16 and BF16 weights can be converted/);
    const huge = Buffer.alloc(16);
    huge.writeBigUInt64LE(2n ** 62n);
    await refuse({ ...good, [shard()]: await file("huge.safetensors", huge) }, /not a safetensors file \(header length/);
  });

  it("a tensor that is no part of the model, a missing layer, a PyTorch checkpoint", async () => {
    const extra = Buffer.from(JSON.stringify({ "model.vision_tower.weight": { dtype: "F32", shape: [2], data_offsets: [0, 8] } }));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(extra.length));
    await refuse({ ...good, "extra.safetensors": await file("extra.safetensors", Buffer.concat([len, extra, Buffer.alloc(8)])) }, /^tensor model\.vision_tower\.weight is not part of a LlamaForCausalLM model/);
    const cfg = JSON.parse(await readFile(good["config.json"]!, "utf8")) as Record<string, unknown>;
    await refuse({ ...good, "config.json": await file("config5.json", JSON.stringify({ ...cfg, num_hidden_layers: 5 })) }, /no weights for layer 2 \(config\.json says 5 layers\)/);
    await refuse({ ...good, "config.json": await file("config-ffn.json", JSON.stringify({ ...cfg, intermediate_size: 96 })) }, /^tensor model\.layers\.0\.mlp\.gate_proj\.weight has shape \[128, 64\]; config\.json makes it \[96, 64\]$/);
    await refuse({ ...good, "config.json": await file("config1.json", JSON.stringify({ ...cfg, num_hidden_layers: 1 })) }, /is for layer 1, but config\.json says 1 layers/);
    await refuse({ "pytorch_model.bin": good[shard()]! }, /^pytorch_model\.bin: ollamats converts safetensors models and LoRA adapters, not PyTorch weights/);
  });

  it("a mixture of experts whose router or experts disagree with config.json, using more experts than it has, or with dense layers among them", async () => {
    const moeDir = path.join(home, "hf-bad-moe");
    await exportHfModel(await makeTestModel({ shape: "tiny", type: "F16", seed: 14, tokenizer: "gpt2", arch: "llama", experts: 4 }), moeDir, 1);
    const moe = Object.fromEntries((await readdir(moeDir)).map((n) => [n, path.join(moeDir, n)]));
    const cfg = JSON.parse(await readFile(moe["config.json"]!, "utf8")) as Record<string, unknown>;
    await refuse({ ...moe, "config.json": await file("moe5.json", JSON.stringify({ ...cfg, num_local_experts: 5 })) }, /^tensor model\.layers\.0\.block_sparse_moe\.gate\.weight has shape \[4, 64\]; config\.json makes it \[5, 64\]$/);
    await refuse({ ...moe, "config.json": await file("moe-used.json", JSON.stringify({ ...cfg, num_experts_per_tok: 9 })) }, /num_experts_per_tok, or names more than its experts/);
    await refuse({ ...moe, "config.json": await file("moe3.json", JSON.stringify({ ...cfg, num_local_experts: 3 })) }, /config\.json makes it \[3, 64\]$/);
    // the shard again without expert 2's up matrix of layer 1
    const shardName = Object.keys(moe).find((n) => n.endsWith(".safetensors"))!;
    const bytes = await readFile(moe[shardName]!);
    const kept = (await readSafetensors(moe[shardName]!, shardName))
      .filter((t) => t.name !== "model.layers.1.block_sparse_moe.experts.2.w3.weight")
      .map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, data: bytes.subarray(t.offset, t.offset + t.bytes) }));
    const short = path.join(home, "moe-short.safetensors");
    await writeSafetensors(short, kept);
    await refuse({ ...moe, [shardName]: short }, /^layer 1 lacks expert 2's up matrix$/);
    const qwen = { ...cfg, architectures: ["Qwen3MoeForCausalLM"], num_experts: 4, mlp_only_layers: [1] };
    await refuse({ ...moe, "config.json": await file("moe-dense.json", JSON.stringify(qwen)) }, /dense layers among its expert layers/);
  });
});
