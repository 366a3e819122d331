// /api/create, complete: quantization (F32/F16 → Q8_0/Q4_0, byte-identical to ggml's reference
// quantizers; F16 → Q4_K_M/Q4_K_S with Ollama's mix of types), clear refusals, the legacy `modelfile` form, FROM a blob, FROM a model that has to be
// pulled first, ADAPTER, and `show --modelfile` output that re-creates the model.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kv, writeGguf } from "../../scripts/gguf-writer.js";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { CLI, createModelFromFile, sha256File, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { generateText, haveOpenssl, haveRegistry, ndjson, postJson, registryEnv, startRegistry, verifyBlobs, type TestRegistry } from "../helpers/registry.js";

let d: TestDaemon;
let home: string;
let reg: TestRegistry | undefined;

const create = (body: object) => postJson(`${d.url}/api/create`, { stream: false, ...body });
const show = async (model: string, verbose = false) => {
  const r = await postJson(`${d.url}/api/show`, { model, verbose });
  expect(r.status).toBe(200);
  return (await r.json()) as {
    modelfile: string;
    template?: string;
    system?: string;
    parameters?: string;
    license?: string;
    messages?: unknown[];
    details: { quantization_level: string };
    tensors?: Array<{ name: string; type: string }>;
  };
};
async function manifestOf(name: string): Promise<{ layers: Array<{ mediaType: string; digest: string; from?: string }> }> {
  return JSON.parse(await readFile(path.join(d.models, "manifests", "registry.ollama.ai", "library", name, "latest"), "utf8"));
}
const weightsOf = async (name: string) => (await manifestOf(name)).layers.find((l) => l.mediaType === "application/vnd.ollama.image.model")?.digest;

async function upload(file: string): Promise<string> {
  const digest = await sha256File(file);
  const r = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(file) });
  expect([200, 201]).toContain(r.status);
  return digest;
}

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "ollamats-home-"));
  d = await startDaemon(registryEnv(home));
  const r = await createModelFromFile(d.url, "base", await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }));
  expect(r.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await d?.stop();
  await reg?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe("quantize", () => {
  it("F32 → Q8_0 and Q4_0 give exactly the bytes of ggml's reference quantizers, with Ollama's progress", async () => {
    const f32 = await makeTestModel({ shape: "tiny", type: "F32", seed: 1 });
    const digest = await upload(f32);
    for (const type of ["Q8_0", "Q4_0"] as const) {
      const res = await postJson(`${d.url}/api/create`, { model: `q-${type.toLowerCase()}`, files: { "m.gguf": digest }, quantize: type.toLowerCase() });
      expect(res.status).toBe(200);
      const lines = await ndjson(res);
      const q = lines.filter((l) => l.status === `quantizing F32 model to ${type}`);
      expect(q.length).toBeGreaterThan(0);
      expect(q[0]).toMatchObject({ digest: "0000000000000000000", total: (await readFile(f32)).length });
      const st = lines.map((l) => l.status);
      expect(st).toContain("verifying conversion");
      expect(st.slice(-2)).toEqual(["writing manifest", "success"]);
      const reference = await sha256File(await makeTestModel({ shape: "tiny", type, seed: 1 }));
      expect(await weightsOf(`q-${type.toLowerCase()}`)).toBe(reference);
      expect((await show(`q-${type.toLowerCase()}`)).details.quantization_level).toBe(type);
    }
    await verifyBlobs(d.models);
  });

  it("F16 → Q4_0 quantizes the matrices, keeps the norms, and the model runs", async () => {
    const digest = await upload(await makeTestModel({ shape: "tiny", type: "F16", seed: 1 }));
    expect((await create({ model: "q16", files: { "m.gguf": digest }, quantize: "Q4_0" })).status).toBe(200);
    const s = await show("q16", true);
    const types = new Map((s.tensors ?? []).map((t) => [t.name, t.type]));
    expect(types.get("blk.0.attn_q.weight")).toBe("Q4_0");
    expect(types.get("output.weight")).toBe("Q4_0");
    expect(types.get("blk.0.attn_norm.weight")).toBe("F32");
    expect((await generateText(d.url, "q16")).length).toBeGreaterThan(0);
  }, 60_000);

  it("F16 → Q4_K_M / Q4_K_S: Ollama's mix of types, and the model computes what the F16 one does", async () => {
    const f16 = await makeTestModel({ shape: "small", type: "F16", seed: 2 });
    const digest = await upload(f16);
    const res = await postJson(`${d.url}/api/create`, { model: "k-m", files: { "m.gguf": digest }, quantize: "q4_K_M" });
    expect(res.status).toBe(200);
    const st = (await ndjson(res)).map((l) => l.status);
    expect(st).toContain("quantizing F16 model to Q4_K_M");
    expect(st.slice(-2)).toEqual(["writing manifest", "success"]);
    const s = await show("k-m", true);
    expect(s.details.quantization_level).toBe("Q4_K_M");
    const types = new Map((s.tensors ?? []).map((t) => [t.name, t.type]));
    // 4 layers: Ollama gives layers 2 and 3 (the last eighth, and every third) the more bits
    expect([0, 1, 2, 3].map((i) => types.get(`blk.${i}.attn_v.weight`))).toEqual(["Q4_K", "Q4_K", "Q6_K", "Q6_K"]);
    expect([0, 1, 2, 3].map((i) => types.get(`blk.${i}.ffn_down.weight`))).toEqual(["Q4_K", "Q4_K", "Q6_K", "Q6_K"]);
    expect(types.get("blk.0.attn_q.weight")).toBe("Q4_K");
    expect(types.get("output.weight")).toBe("Q6_K");
    expect(types.get("blk.0.attn_norm.weight")).toBe("F32");

    // llama.cpp reads the blocks as we wrote them: the next-token distribution stays the F16 model's
    expect((await create({ model: "k-f16", files: { "m.gguf": digest } })).status).toBe(200);
    const top = async (model: string) => {
      const r = await postJson(`${d.url}/api/generate`, { model, prompt: "The quick brown fox jumps over the lazy dog and", raw: true, stream: false, logprobs: true, top_logprobs: 10, options: { temperature: 0, num_predict: 1 } });
      expect(r.status).toBe(200);
      const j = (await r.json()) as { logprobs: Array<{ top_logprobs: Array<{ token: string }> }> };
      return j.logprobs[0]!.top_logprobs.map((t) => t.token);
    };
    const want = await top("k-f16");
    const got = await top("k-m");
    expect(got.slice(0, 3)).toContain(want[0]);
    expect(got.filter((t) => want.includes(t)).length).toBeGreaterThanOrEqual(6);

    const ks = await create({ model: "k-s", files: { "m.gguf": digest }, quantize: "Q4_K_S" });
    expect(ks.status).toBe(200);
    const t2 = new Map(((await show("k-s", true)).tensors ?? []).map((t) => [t.name, t.type]));
    expect([0, 1, 2, 3].map((i) => t2.get(`blk.${i}.attn_v.weight`))).toEqual(["Q5_K", "Q5_K", "Q5_K", "Q5_K"]);
    expect((await show("k-s")).details.quantization_level).toBe("Q4_K_S");
    expect((await generateText(d.url, "k-s")).length).toBeGreaterThan(0);
    await verifyBlobs(d.models);
  }, 120_000);

  it("refuses unknown types and already-quantized sources with a clear 400", async () => {
    const k = await create({ model: "k", from: "base", quantize: "q5_K_M" });
    expect(k.status).toBe(400);
    expect(((await k.json()) as { error: string }).error).toBe("unsupported quantization type Q5_K_M - supported types are F32, F16, Q4_K_S, Q4_K_M, Q8_0, BF16, Q4_0");
    const q = await create({ model: "k", from: "base", quantize: "q8_0" });
    expect(q.status).toBe(400);
    expect(await q.json()).toEqual({ error: "quantization is only supported for F16, BF16 and F32 models" });
    // asking for the type it already has is not an error
    expect((await create({ model: "same", from: "base", quantize: "Q4_0" })).status).toBe(200);
    expect(await weightsOf("same")).toBe(await weightsOf("base"));
  });
});

describe("request forms and sources", () => {
  it("the legacy `modelfile` form", async () => {
    const modelfile = [
      "FROM base",
      'SYSTEM """You are legacy."""',
      "PARAMETER temperature 0.3",
      "PARAMETER stop <a>",
      "PARAMETER stop <b>",
      "MESSAGE user hello",
      "MESSAGE assistant hi",
      "LICENSE MIT",
    ].join("\n");
    const r = await create({ model: "legacy", modelfile });
    expect(r.status).toBe(200);
    const s = await show("legacy");
    expect(s.system).toBe("You are legacy.");
    expect(s.parameters).toMatch(/stop\s+"<a>"\nstop\s+"<b>"\ntemperature\s+0\.3/);
    expect(s.messages).toEqual([{ role: "user", content: "hello" }, { role: "assistant", content: "hi" }]);
    expect(s.license).toBe("MIT");
    const path_ = await create({ model: "x", modelfile: "FROM ./model.gguf" });
    expect(path_.status).toBe(400);
    expect(((await path_.json()) as { error: string }).error).toMatch(/file paths are not read by the server/);
    expect((await create({ model: "x", modelfile: "SYSTEM hi" })).status).toBe(400); // no FROM line
  });

  it("FROM a blob (`@sha256:…`) in both forms", async () => {
    const digest = await upload(await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 2 }));
    expect((await create({ model: "blob-new", from: `@${digest}` })).status).toBe(200);
    expect((await create({ model: "blob-old", modelfile: `FROM @${digest}\nSYSTEM s` })).status).toBe(200);
    expect(await weightsOf("blob-new")).toBe(digest);
    expect(await weightsOf("blob-old")).toBe(digest);
  });

  it.runIf(haveRegistry() && haveOpenssl())("FROM a model that is not in the store pulls it first (from an https registry)", async () => {
    reg = await startRegistry({ tls: true });
    // a daemon that trusts the registry's self-signed certificate
    const t = await startDaemon(registryEnv(home, { NODE_EXTRA_CA_CERTS: reg.caFile as string }));
    try {
      const remote = `${reg.host}/lib/remote:latest`;
      expect((await createModelFromFile(t.url, remote, await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 3 }))).status).toBe(200);
      expect(await (await postJson(`${t.url}/api/push`, { model: remote, stream: false })).json()).toEqual({ status: "success" });
      expect((await postJson(`${t.url}/api/delete`, { model: remote }, "DELETE")).status).toBe(200);
      const lines = await ndjson(await postJson(`${t.url}/api/create`, { model: "derived", from: remote, system: "Derived." }));
      const st = lines.map((l) => l.status);
      expect(st[0]).toBe("pulling manifest");
      expect(st).toContain("verifying sha256 digest");
      expect(st[st.length - 1]).toBe("success");
      const tags = (await (await fetch(`${t.url}/api/tags`)).json()) as { models: Array<{ name: string }> };
      expect(tags.models.map((m) => m.name).sort()).toEqual([remote, "derived:latest"].sort());
      await verifyBlobs(t.models);
    } finally {
      await t.stop();
    }
  }, 30_000);

  it("ADAPTER: one GGUF adapter becomes an adapter layer; two are refused", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-adapter-"));
    try {
      const file = path.join(dir, "lora.gguf");
      const f32 = (n: number) => ({ name: "", dims: [], type: "F32" as const, data: () => [new Uint8Array(n * 4)] });
      await writeGguf(
        file,
        [kv.str("general.architecture", "llama"), kv.str("general.type", "adapter"), kv.str("adapter.type", "lora"), kv.f32("adapter.lora.alpha", 16)],
        [
          { ...f32(64 * 8), name: "blk.0.attn_q.weight.lora_a", dims: [64, 8] },
          { ...f32(8 * 64), name: "blk.0.attn_q.weight.lora_b", dims: [8, 64] },
        ],
      );
      const digest = await upload(file);
      expect((await create({ model: "with-adapter", from: "base", adapters: { "lora.gguf": digest } })).status).toBe(200);
      const m = await manifestOf("with-adapter");
      expect(m.layers.filter((l) => l.mediaType === "application/vnd.ollama.image.adapter").map((l) => l.digest)).toEqual([digest]);
      expect((await show("with-adapter")).modelfile).toContain(`\nADAPTER ${path.join(d.models, "blobs", digest.replace(":", "-"))}\n`);
      const two = await create({ model: "two", from: "base", adapters: { "a.gguf": digest, "b.gguf": digest } });
      expect(await two.json()).toEqual({ error: "only one adapter is currently supported" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("architecture defaults", () => {
  it("a GGUF of an architecture Ollama gives a renderer and parser gets them (Gemma 4: and its stop), unless the request names its own", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-arch-"));
    try {
      const file = path.join(dir, "g4.gguf");
      await writeGguf(file, [kv.str("general.architecture", "gemma4")], [{ name: "token_embd.weight", dims: [8, 4], type: "F32" as const, data: () => [new Uint8Array(8 * 4 * 4)] }]);
      const digest = await upload(file);
      expect((await create({ model: "g4", files: { "g4.gguf": digest } })).status).toBe(200);
      const shown = await show("g4");
      expect(shown.modelfile).toContain("\nRENDERER gemma4\n");
      expect(shown.modelfile).toContain("\nPARSER gemma4\n");
      expect(shown.parameters).toMatch(/^stop\s+"<turn\|>"$/m);
      expect((await create({ model: "g4-own", files: { "g4.gguf": digest }, parser: "qwen3", parameters: { stop: ["<end>"] } })).status).toBe(200);
      const own = await show("g4-own");
      expect(own.modelfile).toContain("\nPARSER qwen3\n");
      expect(own.modelfile).toContain("\nRENDERER gemma4\n");
      expect(own.parameters).toMatch(/^stop\s+"<end>"$/m);
      expect(own.parameters).not.toContain("<turn|>");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("show --modelfile", () => {
  it("prints a Modelfile that re-creates the model (ollamats create -f)", async () => {
    const template = '{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}<|assistant|>{{ .Response }}';
    const r = await create({
      model: "rich",
      from: "base",
      template,
      system: "  You are \"rich\".\nTwo lines.",
      parameters: { stop: ["<|user|>", "the end"], num_ctx: 1024, temperature: 0.25, use_mmap: false },
      messages: [{ role: "user", content: "multi\nline" }, { role: "assistant", content: "ok" }],
      license: ["MIT License\n\nCopyright \"someone\"", "second"],
    });
    expect(r.status).toBe(200);
    const cli = (args: string[]) =>
      new Promise<{ code: number; out: string; err: string }>((resolve) => {
        const p = spawn(process.execPath, [CLI, ...args], { env: { ...d.env, OLLAMA_HOST: d.host } });
        let out = "";
        let err = "";
        p.stdout.on("data", (x: Buffer) => (out += x.toString()));
        p.stderr.on("data", (x: Buffer) => (err += x.toString()));
        p.on("close", (code) => resolve({ code: code ?? -1, out, err }));
      });
    const printed = await cli(["show", "--modelfile", "rich"]);
    expect(printed.code).toBe(0);
    expect(printed.out.startsWith('# Modelfile generated by "ollama show"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM rich:latest\n\nFROM /')).toBe(true);
    const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-mf-"));
    try {
      await writeFile(path.join(dir, "Modelfile"), printed.out);
      const made = await cli(["create", "rich2", "-f", path.join(dir, "Modelfile")]);
      expect(made.err).toMatch(/success/);
      expect(made.code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const [a, b] = [await show("rich"), await show("rich2")];
    for (const k of ["template", "system", "parameters", "license", "messages"] as const) expect(b[k], k).toEqual(a[k]);
    expect(await weightsOf("rich2")).toBe(await weightsOf("rich"));
    const h = (s: string) => createHash("sha256").update(s.split("\n").slice(4).join("\n")).digest("hex");
    expect(h(b.modelfile)).toBe(h(a.modelfile));
  }, 30_000);
});
