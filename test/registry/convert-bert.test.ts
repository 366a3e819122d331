// `create` from a sentence-transformers BERT checkpoint (all-MiniLM, bge, e5 are such
// directories): a generated BERT model exported as transformers and sentence-transformers save
// it (hf-export-bert.ts) and created back, through the API and the CLI's `FROM ./dir`. The
// converted model must have the original's tensors and vocabulary, the checkpoint's pooling, and
// embed exactly as the original does; a checkpoint it cannot convert gets a 400 that says why.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { readGgufInfo } from "../../src/registry/gguf.js";
import { CLI, createModelFromFile, sha256File, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { tensorsOf } from "../helpers/gguf-tensors.js";
import { exportHfBert, type BertExport } from "../helpers/hf-export-bert.js";
import { ndjson, postJson } from "../helpers/registry.js";

const exec = promisify(execFile);
let d: TestDaemon;
let home: string;
let gguf: string;

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "ollamats-convert-bert-"));
  d = await startDaemon({ HOME: home });
  gguf = await makeTestModel({ arch: "bert", type: "F16", seed: 21 });
  expect((await createModelFromFile(d.url, "orig", gguf)).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await d?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** Every file of `dir` and of its subdirectories (one level, as the CLI uploads), by relative name. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await readdir(dir)) {
    const file = path.join(dir, name);
    if ((await stat(file)).isDirectory()) for (const inner of await readdir(file)) out[`${name}/${inner}`] = path.join(file, inner);
    else out[name] = file;
  }
  return out;
}

async function create(model: string, local: Record<string, string>): Promise<{ status: number; lines: Array<Record<string, unknown>> }> {
  const files: Record<string, string> = {};
  for (const [name, file] of Object.entries(local)) {
    const digest = await sha256File(file);
    expect((await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(file) })).status).toBeLessThan(300);
    files[name] = digest;
  }
  const r = await postJson(`${d.url}/api/create`, { model, files });
  return { status: r.status, lines: await ndjson(r) };
}

async function exported(name: string, o: BertExport): Promise<string> {
  const dir = path.join(home, name);
  await exportHfBert(gguf, dir, o);
  return dir;
}

async function weightsPath(model: string): Promise<string> {
  const m = JSON.parse(await readFile(path.join(d.models, "manifests", "registry.ollama.ai", "library", model, "latest"), "utf8")) as { layers: Array<{ mediaType: string; digest: string }> };
  return path.join(d.models, "blobs", m.layers.find((l) => l.mediaType === "application/vnd.ollama.image.model")!.digest.replace(":", "-"));
}

const TEXTS = ["Hello there", "The QUICK brown fox, again: and again!", "zzqx unknownword café 日本"];

async function embed(model: string): Promise<{ embeddings: number[][]; prompt_eval_count: number }> {
  const r = await postJson(`${d.url}/api/embed`, { model, input: TEXTS });
  expect(r.status, await r.clone().text()).toBe(200);
  const { embeddings, prompt_eval_count } = (await r.json()) as { embeddings: number[][]; prompt_eval_count: number };
  return { embeddings, prompt_eval_count };
}

describe("create from a sentence-transformers BERT directory", () => {
  it("mean pooling: the original's tensors byte for byte, its hyperparameters and vocabulary, and the same embeddings", async () => {
    const { status, lines } = await create("conv-mean", await filesOf(await exported("st-mean", { pooling: "mean" })));
    expect(status).toBe(200);
    expect(lines.map((l) => l.status)).toContain("converting model");
    expect(lines.at(-1)?.status).toBe("success");
    const file = await weightsPath("conv-mean");
    // the position-id buffer and the pooler are left out
    expect(await tensorsOf(file)).toEqual(await tensorsOf(gguf));
    const [mo, mc] = [(await readGgufInfo(gguf, { arrays: "full" })).metadata, (await readGgufInfo(file, { arrays: "full" })).metadata];
    const keys = Object.keys(mo).filter((k) => k.startsWith("bert.") || k === "tokenizer.ggml.tokens" || k === "tokenizer.ggml.model" || k === "tokenizer.ggml.token_type_count");
    expect(keys.length).toBeGreaterThanOrEqual(11);
    expect(Object.fromEntries(keys.map((k) => [k, mc[k]]))).toEqual(Object.fromEntries(keys.map((k) => [k, mo[k]])));
    // [CLS] starts every input and [SEP] ends it, named as llama.cpp's converter names them
    const id = (t: string) => (mo["tokenizer.ggml.tokens"] as string[]).indexOf(t);
    expect([mc["tokenizer.ggml.bos_token_id"], mc["tokenizer.ggml.eos_token_id"], mc["tokenizer.ggml.add_bos_token"], mc["tokenizer.ggml.unknown_token_id"]]).toEqual([id("[CLS]"), id("[SEP]"), true, id("[UNK]")]);
    expect(mc["bert.normalize_embeddings"]).toBe(true);
    expect(await embed("conv-mean")).toEqual(await embed("orig"));
    const show = (await (await postJson(`${d.url}/api/show`, { model: "conv-mean" })).json()) as { capabilities: string[]; details: { family: string } };
    expect([show.capabilities, show.details.family]).toEqual([["embedding"], "bert"]);
  }, 120_000);

  it("[CLS] pooling through the CLI's `FROM ./dir` (the Pooling module's config in its subdirectory comes along), quantized", async () => {
    await exported("st-cls", { pooling: "cls" });
    await writeFile(path.join(home, "Modelfile"), "FROM ./st-cls\n");
    const { stdout, stderr } = await exec(process.execPath, [CLI, "create", "conv-cls", "-q", "q8_0", "-f", path.join(home, "Modelfile")], { env: d.env, timeout: 120_000 });
    expect(stdout + stderr).toMatch(/converting model/);
    const info = await readGgufInfo(await weightsPath("conv-cls"));
    expect(info.metadata["bert.pooling_type"]).toBe(2);
    // the matrices quantized, the embedding tables kept as llama.cpp's quantizer keeps them
    const type = (n: string) => info.tensors.find((t) => t.name === n)?.typeName;
    expect([type("blk.0.ffn_up.weight"), type("token_embd.weight"), type("position_embd.weight"), type("token_types.weight")]).toEqual(["Q8_0", "Q8_0", "F16", "F32"]);
    const [cls, mean] = [await embed("conv-cls"), await embed("orig")];
    expect(cls.prompt_eval_count).toBe(mean.prompt_eval_count);
    expect(Math.hypot(...cls.embeddings[0]!)).toBeCloseTo(1, 6);
    expect(cls.embeddings[0]).not.toEqual(mean.embeddings[0]);
  }, 120_000);

  it("without modules.json or tokenizer_config.json: mean pooling, the special tokens from tokenizer.json", async () => {
    const { status } = await create("conv-bare", await filesOf(await exported("st-bare", { noTokenizerConfig: true })));
    expect(status).toBe(200);
    const m = (await readGgufInfo(await weightsPath("conv-bare"))).metadata;
    expect([m["bert.pooling_type"], m["tokenizer.ggml.cls_token_id"], m["tokenizer.ggml.seperator_token_id"]]).toEqual([1, 101, 102]);
    expect(await embed("conv-bare")).toEqual(await embed("orig"));
  }, 120_000);
});

describe("a BERT directory that cannot be converted gets a 400 that says why", () => {
  const refused = async (name: string, change: (files: Record<string, string>) => Promise<void>, error: RegExp) => {
    const files = await filesOf(await exported(name, { pooling: "mean" }));
    await change(files);
    const { status, lines } = await create("bad", files);
    expect({ status, error: lines[0]?.error }).toMatchObject({ status: 400, error: expect.stringMatching(error) });
  };
  const rewrite = async (file: string, edit: (j: Record<string, unknown>) => Record<string, unknown>) => writeFile(file, JSON.stringify(edit(JSON.parse(await readFile(file, "utf8")))));

  it("a pooling mode llama.cpp does not compute, or a Pooling module whose config is missing", async () => {
    await refused("st-max", async (f) => rewrite(f["1_Pooling/config.json"]!, (j) => ({ ...j, pooling_mode_mean_tokens: false, pooling_mode_max_tokens: true })), /^1_Pooling\/config\.json: a pooling mode llama\.cpp does not compute/);
    await refused("st-nopool", async (f) => void delete f["1_Pooling/config.json"], /^modules\.json names a Pooling module in "1_Pooling", but 1_Pooling\/config\.json is not among the files/);
  }, 60_000);

  it("an activation or position embedding llama.cpp's BERT does not have, a missing layer tensor, a wrong shape", async () => {
    await refused("st-relu", async (f) => rewrite(f["config.json"]!, (j) => ({ ...j, hidden_act: "relu" })), /hidden_act "relu"; llama\.cpp's BERT uses GELU/);
    await refused("st-rel", async (f) => rewrite(f["config.json"]!, (j) => ({ ...j, position_embedding_type: "relative_key" })), /position_embedding_type "relative_key"/);
    await refused("st-layers", async (f) => rewrite(f["config.json"]!, (j) => ({ ...j, num_hidden_layers: 3 })), /^the safetensors files have no weights for layer 2 \(config\.json says 3 layers\)$/);
    await refused("st-ffn", async (f) => rewrite(f["config.json"]!, (j) => ({ ...j, intermediate_size: 256 })), /^tensor encoder\.layer\.0\.intermediate\.dense\.weight has shape \[128, 64\]; config\.json makes it \[256, 64\]$/);
  }, 60_000);
});
