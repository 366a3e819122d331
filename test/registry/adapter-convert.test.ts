// `create` with a safetensors LoRA adapter (`ADAPTER ./dir`): the generated GGUF test adapter is
// exported as PEFT and as mlx-lm save adapters (hf-export.ts) and created back on its base model,
// through the API and the CLI. The converted adapter must be the original byte for byte (Llama's
// q rows reordered back, mlx-lm's transposes undone, PEFT's and mlx-lm's scales as llama.cpp's
// alpha) and give the same answers; adapters llama.cpp cannot apply get a 400 that says why.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestAdapter } from "../../scripts/make-test-adapter.js";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { readGgufInfo } from "../../src/registry/gguf.js";
import { CLI, createModelFromFile, sha256File, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { tensorsOf } from "../helpers/gguf-tensors.js";
import { exportLoraAdapter, writeSafetensors } from "../helpers/hf-export.js";
import { ndjson, postJson } from "../helpers/registry.js";

const exec = promisify(execFile);
let d: TestDaemon;
let home: string;
let adapter: string;
const HEADS = { q: 2, kv: 1 }; // the tiny shape's
const PEFT_CONFIG = { peft_type: "LORA", r: 4, lora_alpha: 4, target_modules: ["q_proj", "v_proj", "up_proj"], base_model_name_or_path: "tiny" };

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "ollamats-adapter-convert-"));
  d = await startDaemon({ HOME: home });
  const [base, a] = await Promise.all([makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }), makeTestAdapter({ seed: 1 })]);
  adapter = a;
  const r = await createModelFromFile(d.url, "base", base);
  expect(r.status, await r.text()).toBe(200);
  const t = await postJson(`${d.url}/api/create`, { model: "tuned-gguf", from: "base", adapters: await upload([adapter]), stream: false });
  expect(t.status, await t.text()).toBe(200);
}, 60_000);
afterAll(async () => {
  await d?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

async function upload(files: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const file of files) {
    const digest = await sha256File(file);
    const r = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(file) });
    expect([200, 201]).toContain(r.status);
    out[path.basename(file)] = digest;
  }
  return out;
}
const uploadDir = async (dir: string) => upload((await readdir(dir)).map((n) => path.join(dir, n)));

async function adapterPath(model: string): Promise<string> {
  const m = JSON.parse(await readFile(path.join(d.models, "manifests", "registry.ollama.ai", "library", model, "latest"), "utf8")) as { layers: Array<{ mediaType: string; digest: string }> };
  const digest = m.layers.find((l) => l.mediaType === "application/vnd.ollama.image.adapter")!.digest;
  return path.join(d.models, "blobs", digest.replace(":", "-"));
}

async function tensorValues(file: string, name: string): Promise<Float32Array> {
  const info = await readGgufInfo(file);
  const t = info.tensors.find((x) => x.name === name)!;
  expect(t.typeName).toBe("F32");
  const bytes = await readFile(file);
  const b = bytes.subarray(info.dataOffset + t.offset, info.dataOffset + t.offset + t.bytes);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

async function answer(model: string): Promise<string> {
  const r = await postJson(`${d.url}/api/generate`, { model, prompt: "Hello there", raw: true, stream: false, options: { seed: 42, temperature: 0.8, num_predict: 16, num_ctx: 512 } });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return (JSON.parse(text) as { response: string }).response;
}

async function createWith(model: string, adapters: Record<string, string>): Promise<{ status: number; lines: Array<Record<string, unknown>> }> {
  const r = await postJson(`${d.url}/api/create`, { model, from: "base", adapters });
  return { status: r.status, lines: r.status === 200 ? await ndjson(r) : [(await r.json()) as Record<string, unknown>] };
}

describe("create with a safetensors LoRA adapter", () => {
  it("PEFT's adapter_model.safetensors: the original GGUF adapter byte for byte, with its alpha, and the same answers", async () => {
    const dir = path.join(home, "peft");
    await exportLoraAdapter(adapter, dir, "peft", HEADS, PEFT_CONFIG);
    const { status, lines } = await createWith("tuned-peft", await uploadDir(dir));
    expect(status).toBe(200);
    expect(lines.map((l) => l.status)).toContain("converting adapter");
    expect(lines.at(-1)).toEqual({ status: "success" });
    const converted = await adapterPath("tuned-peft");
    expect(await tensorsOf(converted)).toEqual(await tensorsOf(adapter));
    const meta = (await readGgufInfo(converted)).metadata;
    expect([meta["general.architecture"], meta["general.type"], meta["adapter.type"], meta["adapter.lora.alpha"]]).toEqual(["llama", "adapter", "lora", 4]);
    const tuned = await answer("tuned-peft");
    expect(tuned).toBe(await answer("tuned-gguf"));
    expect(tuned).not.toBe(await answer("base"));
  });

  it("mlx-lm's adapters.safetensors (transposed, a direct scale): the same adapter", async () => {
    const dir = path.join(home, "mlx");
    await exportLoraAdapter(adapter, dir, "mlx", HEADS, { fine_tune_type: "lora", num_layers: 2, lora_parameters: { rank: 4, scale: 1.0, dropout: 0 } });
    const { status } = await createWith("tuned-mlx", await uploadDir(dir));
    expect(status).toBe(200);
    const converted = await adapterPath("tuned-mlx");
    expect(await tensorsOf(converted)).toEqual(await tensorsOf(adapter));
    expect((await readGgufInfo(converted)).metadata["adapter.lora.alpha"]).toBe(4); // scale 1 × rank 4
    expect(await answer("tuned-mlx")).toBe(await answer("tuned-gguf"));
  });

  it("rsLoRA's alpha/√r becomes llama.cpp's alpha; a module's own alpha_pattern is folded into its B values", async () => {
    const dir = path.join(home, "rslora");
    await exportLoraAdapter(adapter, dir, "peft", HEADS, { ...PEFT_CONFIG, lora_alpha: 2, use_rslora: true });
    expect((await createWith("tuned-rs", await uploadDir(dir))).status).toBe(200);
    const rs = await adapterPath("tuned-rs");
    expect(await tensorsOf(rs)).toEqual(await tensorsOf(adapter)); // 2·√4 = 4: the original's alpha
    expect((await readGgufInfo(rs)).metadata["adapter.lora.alpha"]).toBe(4);
    expect(await answer("tuned-rs")).toBe(await answer("tuned-gguf"));

    const dir2 = path.join(home, "pattern");
    await exportLoraAdapter(adapter, dir2, "peft", HEADS, { ...PEFT_CONFIG, lora_alpha: 2, alpha_pattern: { "v_proj": 4 } });
    expect((await createWith("tuned-pattern", await uploadDir(dir2))).status).toBe(200);
    const pat = await adapterPath("tuned-pattern");
    expect((await readGgufInfo(pat)).metadata["adapter.lora.alpha"]).toBe(2);
    for (const name of ["blk.1.attn_v.weight.lora_b", "blk.1.attn_q.weight.lora_b", "blk.1.attn_v.weight.lora_a"]) {
      const [got, orig] = [await tensorValues(pat, name), await tensorValues(adapter, name)];
      const factor = name === "blk.1.attn_v.weight.lora_b" ? 2 : 1; // v's scale 4/4 over the file's 2/4
      expect(got.length).toBe(orig.length);
      expect(Array.from(got)).toEqual(Array.from(orig, (x) => Math.fround(x * factor)));
    }
  });

  it("the CLI's ADAPTER naming the directory, or its .safetensors file, converts it", async () => {
    const dir = path.join(home, "peft");
    const mf = path.join(home, "Modelfile");
    await writeFile(mf, `FROM base\nADAPTER ${dir}\n`);
    const r = await exec(process.execPath, [CLI, "create", "tuned-cli", "-f", mf], { env: d.env, timeout: 60_000 });
    expect(r.stdout + r.stderr).toMatch(/success/);
    expect(await tensorsOf(await adapterPath("tuned-cli"))).toEqual(await tensorsOf(adapter));
    await writeFile(mf, `FROM base\nADAPTER ${path.join(dir, "adapter_model.safetensors")}\n`);
    await exec(process.execPath, [CLI, "create", "tuned-cli-file", "-f", mf], { env: d.env, timeout: 60_000 });
    expect(await tensorsOf(await adapterPath("tuned-cli-file"))).toEqual(await tensorsOf(adapter));
    expect(await answer("tuned-cli-file")).toBe(await answer("tuned-gguf"));
  });

  it("adapters llama.cpp cannot apply, or that do not fit the base, get a 400 that says why", async () => {
    const f32 = (n: number) => Buffer.alloc(n * 4);
    const A = (m: string, layer = 0, r = 4, nIn = 64) => ({ name: `base_model.model.model.layers.${layer}.${m}.lora_A.weight`, dtype: "F32" as const, shape: [r, nIn], data: f32(r * nIn) });
    const B = (m: string, nOut: number, layer = 0, r = 4) => ({ name: `base_model.model.model.layers.${layer}.${m}.lora_B.weight`, dtype: "F32" as const, shape: [nOut, r], data: f32(r * nOut) });
    const good = [A("self_attn.q_proj"), B("self_attn.q_proj", 64)];
    let n = 0;
    const refuse = async (tensors: Parameters<typeof writeSafetensors>[1], config: Record<string, unknown> | undefined, want: RegExp) => {
      const dir = path.join(home, `bad-${n++}`);
      await exportLoraAdapter(adapter, dir, "peft", HEADS, {}); // for the directory; both files replaced below
      await rm(path.join(dir, "adapter_config.json"));
      await writeSafetensors(path.join(dir, "adapter_model.safetensors"), tensors);
      if (config) await writeFile(path.join(dir, "adapter_config.json"), JSON.stringify(config));
      const r = await postJson(`${d.url}/api/create`, { model: `bad-${n}`, from: "base", adapters: await uploadDir(dir) });
      const body = (await r.json()) as { error?: string };
      expect(r.status, body.error).toBe(400);
      expect(body.error).toMatch(want);
    };
    await refuse(good, undefined, /^adapter_config\.json is missing/);
    await refuse(good, { ...PEFT_CONFIG, use_dora: true }, /DoRA adapter cannot be converted.*merge_and_unload/);
    await refuse(good, { ...PEFT_CONFIG, peft_type: "IA3" }, /IA3 adapter cannot be converted/);
    await refuse([...good, { name: "base_model.model.lm_head.modules_to_save.default.weight", dtype: "F32", shape: [1024, 64], data: f32(1024 * 64) }], PEFT_CONFIG, /fully trained module/);
    await refuse([...good, A("self_attn.q_proj", 7), B("self_attn.q_proj", 64, 7)], PEFT_CONFIG, /adapts blk\.7\.attn_q\.weight, which the base model does not have/);
    await refuse([A("self_attn.k_proj"), B("self_attn.k_proj", 64)], PEFT_CONFIG, /do not fit blk\.0\.attn_k\.weight/); // k has 32 rows here
    await refuse([A("self_attn.q_proj"), B("self_attn.q_proj", 64, 0, 8)], PEFT_CONFIG, /do not fit/); // ranks differ
    await refuse([A("self_attn.q_proj")], PEFT_CONFIG, /q_proj has lora_B missing/);
    await refuse([...good, { name: "base_model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_A.weight", dtype: "F32", shape: [4, 64], data: f32(256) }], PEFT_CONFIG, /not a LoRA matrix of a decoder layer/);
    // the adapter's files given as the model
    const asModel = await postJson(`${d.url}/api/create`, { model: "bad-model", files: await uploadDir(path.join(home, "peft")) });
    expect(asModel.status).toBe(400);
    expect(((await asModel.json()) as { error: string }).error).toMatch(/these files are a LoRA adapter, not a model/);
  });
});
