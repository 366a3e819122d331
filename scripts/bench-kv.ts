// `npm run bench`, flash attention / KV cache case, through the daemon only: one daemon per
// setting, started with OLLAMA_FLASH_ATTENTION and OLLAMA_KV_CACHE_TYPE (src/config.ts; a
// quantized cache needs flash attention, so q8_0 is measured with it on): (FA off, f16), the
// daemon's default, (FA on, f16) and (FA on, q8_0). Each round runs every setting, in a rotating
// order, one at a time: load, warm up, a 256-token raw prompt followed by BENCH_KV_TOKENS (default
// 64) tokens, unload. Reported per setting: prompt tok/s (prompt_eval_count / prompt_eval_duration)
// and decode tok/s after that prompt (client wall clock, first to last chunk), each relative to
// (FA off, f16); and whether the generated text (same prompt, same seed) is identical to
// (FA off, f16)'s, a proxy for unchanged quality. Medians over BENCH_KV_ROUNDS (default 2) rounds.
// The settings the runner really used come from the daemon's "loaded" log line.
import http from "node:http";
import { loadedSettings, loadModel, startWithModel, unloadModel, type BenchDaemon } from "./bench-daemon.js";
import { caseShape, measureQuietMs, median, ollamaOptions, promptFor, promptOfTokens, waitForQuiet, type EngineShape } from "./bench-plan.js";
import { generate, LoadMeter, nowMs } from "./bench-stream.js";

export interface KvRun {
  promptTokens: number;
  promptTokPerS: number;
  decodeTokPerS: number;
  tokens: number;
  text: string;
  foreignCores: number;
  /** What the runner used, from the daemon log: flash attention, K/V types. */
  loaded: { flashAttention: string; kv: string };
}

export interface KvSetting {
  name: string;
  env: Record<string, string>;
  promptTokPerS: number;
  decodeTokPerS: number;
  /** Relative to the first setting (FA off, f16). */
  promptRel: number;
  decodeRel: number;
  /** Same text as the first setting in every round. */
  sameText: boolean;
  /** Characters the text shares with the first setting's, from the start (worst round). */
  commonPrefixChars: number;
  /** Same text as each setting's in every round, by setting name (e.g. q8_0 vs FA on, f16). */
  sameTextAs: Record<string, boolean>;
  rounds: KvRun[];
}

export interface KvBench {
  settings: KvSetting[];
  rounds: number;
  tokens: number;
  numCtx: number;
  threads: number;
  foreignCoresMax: number;
}

const MODEL = "bench-kv:q4_0";
const SETTINGS: Array<{ name: string; env: Record<string, string> }> = [
  { name: "FA off, f16", env: { OLLAMA_FLASH_ATTENTION: "0", OLLAMA_KV_CACHE_TYPE: "f16" } },
  { name: "FA on, f16", env: { OLLAMA_FLASH_ATTENTION: "1", OLLAMA_KV_CACHE_TYPE: "f16" } },
  { name: "FA on, q8_0", env: { OLLAMA_FLASH_ATTENTION: "1", OLLAMA_KV_CACHE_TYPE: "q8_0" } },
];

async function measure(agent: http.Agent, b: BenchDaemon, shape: EngineShape, prompt: string, tokens: number, quietWaitMs: number): Promise<KvRun> {
  const options = ollamaOptions(shape, tokens);
  const gen = (p: string, n: number) => generate(agent, b.d.url, { model: b.model, prompt: p, raw: true, keep_alive: "10m", options: { ...options, num_predict: n } });
  await loadModel(agent, b, options);
  const loaded = loadedSettings(b);
  await gen(promptFor(40), 16);
  const meter = new LoadMeter(b.d.proc.pid!);
  await waitForQuiet(await meter.ownPids(), measureQuietMs(quietWaitMs));
  await meter.begin();
  const g = await gen(prompt, tokens);
  const foreign = await meter.end();
  await unloadModel(agent, b, options);
  const n = Number(g.final.eval_count);
  return {
    promptTokens: Number(g.final.prompt_eval_count),
    promptTokPerS: Number(g.final.prompt_eval_count) / (Number(g.final.prompt_eval_duration) / 1e9),
    decodeTokPerS: (n - 1) / ((g.tDone - g.tFirst) / 1000),
    tokens: n,
    text: g.text,
    foreignCores: foreign,
    loaded,
  };
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

export async function benchKv(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number; rounds?: number; tokens?: number }): Promise<KvBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, opts.rounds ?? 2);
  const tokens = Math.max(8, opts.tokens ?? 64);
  const shape = caseShape(opts.modelPath, opts.quietWaitMs, 2048);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const daemons: BenchDaemon[] = [];
  const runs: KvRun[][] = SETTINGS.map(() => []);
  try {
    // Idle daemons without a runner cost no CPU: start them all once, load one model at a time.
    for (const s of SETTINGS) {
      daemons.push(await startWithModel({ OLLAMA_NUM_PARALLEL: "1", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m", OLLAMA_KV_CACHE_TYPE_K: "", OLLAMA_KV_CACHE_TYPE_V: "", ...s.env }, MODEL, opts.modelPath));
    }
    for (let r = 0; r < rounds; r++) {
      const prompt = promptOfTokens(50 + r, 256);
      for (let k = 0; k < SETTINGS.length; k++) {
        const i = (r + k) % SETTINGS.length;
        const t = nowMs();
        const x = await measure(agent, daemons[i]!, shape, prompt, tokens, shape.quietWaitMs);
        runs[i]!.push(x);
        log(
          `  kv round ${r + 1} ${SETTINGS[i]!.name.padEnd(12)} (runner: flash_attention=${x.loaded.flashAttention} kv=${x.loaded.kv}) prompt ${x.promptTokens} tokens ` +
            `${x.promptTokPerS.toFixed(1)} tok/s, decode ${x.decodeTokPerS.toFixed(1)} tok/s, other processes ${x.foreignCores.toFixed(2)} cores (${((nowMs() - t) / 1000).toFixed(1)} s)`,
        );
      }
    }
  } catch (err) {
    for (const b of daemons) process.stderr.write(`--- kv-bench daemon log (tail) ---\n${b.d.logs().slice(-1500)}\n`);
    throw err;
  } finally {
    agent.destroy();
    for (const b of daemons) await b.d.stop();
  }
  const base = runs[0]!;
  const med = (xs: KvRun[], v: (x: KvRun) => number) => median(xs.map(v));
  const settings = SETTINGS.map((s, i): KvSetting => {
    const rs = runs[i]!;
    const promptTokPerS = med(rs, (x) => x.promptTokPerS);
    const decodeTokPerS = med(rs, (x) => x.decodeTokPerS);
    return {
      ...s,
      promptTokPerS,
      decodeTokPerS,
      promptRel: promptTokPerS / med(base, (x) => x.promptTokPerS),
      decodeRel: decodeTokPerS / med(base, (x) => x.decodeTokPerS),
      sameText: rs.every((x, r) => x.text === base[r]?.text),
      commonPrefixChars: Math.min(...rs.map((x, r) => commonPrefix(x.text, base[r]?.text ?? ""))),
      sameTextAs: Object.fromEntries(SETTINGS.map((o, j) => [o.name, rs.every((x, r) => x.text === runs[j]![r]?.text)])),
      rounds: rs,
    };
  });
  return { settings, rounds, tokens, numCtx: shape.numCtx, threads: shape.threads, foreignCoresMax: Math.max(...runs.flat().map((x) => x.foreignCores)) };
}
