// The llama.cpp backend: local GGUF models, one runner child process per loaded model
// (node-llama-cpp inside). It owns its memory planner (memory.ts), its KV-cache policy
// (kv-cache.ts), its reload rule (placement.ts) and its grammar compiler (json-schema.ts).
import { readFile } from "node:fs/promises";
import os from "node:os";
import { loadConfig, type Config } from "../../config.js";
import { ggufSource, type GgufSource, type ModelSpec } from "../../registry/model-spec.js";
import type { Backend, CompiledFormat, DeviceInfo, Placement, Runner, RunnerFeatures, RunnerOptions, StructuredOutput } from "../backend.js";
import { specialTokenAllowance } from "./embed-inputs.js";
import { FormatCompiler } from "./format-compiler.js";
import { compileLlamaFormat } from "./json-schema.js";
import { checkKvSettings } from "./kv-cache.js";
import { humanBytes2, ramShortMessage, type MemoryPlan } from "./memory.js";
import { FactsCache, loadOptionsFor, needsReload, planFor } from "./placement.js";
import type { GpuProbe, LoadOptions, LoadPlan, StateStore } from "./protocol.js";
import { LLAMACPP_FEATURES, releaseOrphanedSpares, RunnerProcess, type RunnerLogSink } from "./runner-process.js";
import { SpareRunner } from "./spare-runner.js";

/** llama.cpp's LLAMA_POOLING_TYPE_RANK: a reranker (Ollama's rule still calls it "embedding"). */
const POOLING_RANK = 4;

/** Which environment variable restricts a runner to some GPUs, per ggml backend. */
const VISIBLE_ENV: Record<string, string> = { cuda: "CUDA_VISIBLE_DEVICES", vulkan: "GGML_VK_VISIBLE_DEVICES" };

interface Live {
  runner: RunnerProcess;
  gpus: string[]; // GPU ids it may use
}

/** A local model's placement: its load options and the memory plan for them. */
export interface LlamaPlacement extends Placement {
  opts: LoadOptions;
  memory: MemoryPlan;
  source: GgufSource;
}

/** What a request wants of a local runner: its load options. */
interface LlamaWant {
  opts: LoadOptions;
  source: GgufSource;
}

export class LlamaCppBackend implements Backend<LlamaPlacement, LlamaWant> {
  readonly name = "llamacpp";
  private probed: Promise<GpuProbe> | null = null;
  private readonly live = new Set<Live>();
  private readonly config: Config;
  private readonly facts: FactsCache;
  private readonly formats = new FormatCompiler();
  private readonly spares: SpareRunner<RunnerProcess>;

  constructor(
    private readonly opts: {
      debug: boolean;
      /** skip the GPU probe (OLLAMA_LLM_LIBRARY=cpu) */
      cpuOnly?: boolean;
      /** where runners keep their slots' prompt caches across unloads (none: not kept) */
      states?: StateStore;
      config?: Config;
      /** the daemon's log, for the runners' lines */
      log?: RunnerLogSink;
    },
  ) {
    this.config = opts.config ?? loadConfig(process.env);
    checkKvSettings(this.config); // contradicting cache settings stop the daemon at start
    this.facts = new FactsCache(this.config);
    if (this.config.spareRunner) void releaseOrphanedSpares();
    this.spares = new SpareRunner({
      enabled: this.config.spareRunner,
      busy: () => this.busy(),
      spawn: (keep) => new RunnerProcess(0, opts.debug, {}, keep, opts.log),
      // Runners leave the spare's CPU out of what others take: it pauses while they compute.
      changed: (pid) => {
        for (const l of this.live) l.runner.yielding(pid === null ? [] : [pid]);
      },
    });
  }

  handles(spec: ModelSpec): boolean {
    return spec.source.kind === "gguf";
  }

  /** One runner per weights file, as Ollama's scheduler keys runners by model path. */
  modelKey(spec: ModelSpec): string {
    return `gguf:${this.source(spec).path}`;
  }

  /** A reranker (pooling_type rank) ranks documents and does not embed. */
  features(spec: ModelSpec): RunnerFeatures {
    if (ggufSource(spec)?.facts.poolingType !== POOLING_RANK) return LLAMACPP_FEATURES;
    return { ...LLAMACPP_FEATURES, rank: true, embed: { missing: "this model is a reranker (pooling_type rank); rank documents with /api/rerank" } };
  }

  compileFormat(format: StructuredOutput): CompiledFormat | Promise<CompiledFormat> {
    if (format.kind === "json") return { backend: this.name, value: compileLlamaFormat(format) };
    const compiled = this.formats.compile(format);
    return compiled instanceof Promise ? compiled.then((value) => ({ backend: this.name, value })) : { backend: this.name, value: compiled };
  }

  private source(spec: ModelSpec): GgufSource {
    const src = ggufSource(spec);
    if (!src) throw new Error(`${spec.shortName} is not a local GGUF model`);
    return src;
  }

  want(spec: ModelSpec, runner: RunnerOptions): LlamaWant {
    const source = this.source(spec);
    return { source, opts: loadOptionsFor(this.config, source, runner, this.facts.get(source).kv) };
  }

  needsReload(loaded: LlamaPlacement, wanted: LlamaWant): boolean {
    return needsReload(loaded.opts, wanted.opts);
  }

  async plan(_spec: ModelSpec, { source, opts }: LlamaWant): Promise<LlamaPlacement> {
    const facts = this.facts.get(source);
    const devices = await this.devices();
    const memory = planFor(this.config, devices, facts, opts);
    const gpuNames = new Map(devices.map((d) => [d.id, d.name]));
    return {
      fits: memory.fitsRam && memory.fitsGpu,
      ...(memory.fitsRam ? {} : { refusal: ramShortMessage(memory) }),
      local: true,
      sharesCpu: (!memory.fullOffload || memory.gpuLayers === 0) && opts.numThread === 0,
      warnings: facts.kv.warnings,
      describe: {
        layers: `${memory.gpuLayers}/${facts.shape.blockCount + 1} on GPU`,
        gpus: memory.devices.length > 0 ? memory.devices.map((d) => `${gpuNames.get(d.id) ?? d.id}:${d.layers}`).join(",") : undefined,
        "memory.required": humanBytes2(memory.totalBytes),
        "memory.vram": humanBytes2(memory.vramBytes),
        "memory.kv": humanBytes2(memory.kvBytes),
        "memory.graph": humanBytes2(memory.graphBytes),
        ctx: `${opts.numCtx}x${opts.slots}`,
        draft: memory.draft ? `${memory.draft.gpuLayers > 0 ? "GPU" : "CPU"} ${humanBytes2(memory.draft.vramBytes + memory.draft.ramBytes)}, ${opts.draftNumPredict} per step` : opts.promptLookup ? `prompt lookup, ${opts.draftNumPredict} per step` : undefined,
        kv: `${opts.kvCacheTypeK}/${opts.kvCacheTypeV}`,
        flash_attention: opts.flashAttention,
      },
      opts,
      memory,
      source,
    };
  }

  async load(spec: ModelSpec, p: LlamaPlacement, signal: AbortSignal): Promise<Runner> {
    const plan: LoadPlan = {
      gpuLayers: p.memory.gpuLayers,
      ...(p.memory.draft ? { draftGpuLayers: p.memory.draft.gpuLayers } : {}),
      ...(p.memory.devices.length > 0 ? { gpus: p.memory.devices.map((d) => d.id) } : {}),
      ...(Number.isFinite(this.config.loadTimeoutMs) ? { loadTimeoutMs: this.config.loadTimeoutMs } : {}),
    };
    const runner = await this.start(p.source.path, p.opts, plan, signal);
    runner.embedAllowance = runner.info.inputSpecials ?? specialTokenAllowance(p.source.gguf.metadata);
    return runner;
  }

  warmUp(log: (msg: string) => void): void {
    void this.devices().then(
      (d) => {
        const gpus = d.filter((x) => x.kind === "gpu").map((g) => `${g.library} ${g.name} ${humanBytes2(g.totalBytes)}`);
        log(gpus.length > 0 ? `GPUs: ${gpus.join(", ")}` : "no GPU found, models run on the CPU");
      },
      (err: unknown) => log(`device discovery failed: ${(err as Error).message}`),
    );
  }

  /**
   * GPUs come from a runner child, once, which then stays as the warm spare (the daemon never loads the native addon
   * itself: it would cost ~100 MB of RSS and put a native crash inside the daemon). node-llama-cpp
   * reports only the sum over the GPUs, so each of N GPUs is taken as 1/N of it (exact for
   * identical GPUs). A GPU's free memory is then what was free at the probe minus what our live
   * runners report they hold on it; system memory is read live from the OS.
   */
  probe(): Promise<GpuProbe> {
    const none: GpuProbe = { library: false, names: [], totalBytes: 0, freeBytes: 0 };
    if (!this.probed && this.opts.cpuOnly) this.spares.startCpuOnly();
    this.probed ??= this.opts.cpuOnly ? Promise.resolve(none) : this.spares.probe().catch(() => none);
    return this.probed;
  }

  async devices(): Promise<DeviceInfo[]> {
    const cpu: DeviceInfo = {
      id: "cpu",
      kind: "cpu",
      library: "cpu",
      name: "CPU",
      totalBytes: os.totalmem(),
      freeBytes: os.freemem(),
      swapFreeBytes: await swapFree(),
    };
    const gpu = await this.probe();
    if (gpu.library === false || gpu.names.length === 0) return [cpu];
    const n = gpu.names.length;
    const used = new Map<string, number>();
    for (const l of this.live) {
      const share = l.runner.info.vramBytes / Math.max(1, l.gpus.length);
      for (const id of l.gpus) used.set(id, (used.get(id) ?? 0) + share);
    }
    const gpus: DeviceInfo[] = gpu.names.map((name, i) => {
      const id = String(i);
      return {
        id,
        kind: "gpu",
        library: gpu.library as string,
        name,
        totalBytes: Math.floor(gpu.totalBytes / n),
        freeBytes: Math.max(0, Math.floor(gpu.freeBytes / n - (used.get(id) ?? 0))),
      };
    });
    return [cpu, ...gpus];
  }

  /** Starts a runner child for a weights file (what load does once the plan is made). */
  async start(modelPath: string, opts: LoadOptions, plan: LoadPlan, signal: AbortSignal): Promise<RunnerProcess> {
    const gpu = plan.gpuLayers !== 0 ? await this.probe() : null;
    const all = gpu && gpu.library !== false ? gpu.names.map((_, i) => String(i)) : [];
    const gpus = plan.gpus ?? all;
    const env: Record<string, string> = {};
    const envName = gpu && gpu.library !== false ? VISIBLE_ENV[gpu.library] : undefined;
    if (envName && plan.gpus && plan.gpus.length < all.length) env[envName] = visibleList(process.env[envName], plan.gpus);
    // The spare runs with the daemon's environment: a runner pinned to some GPUs starts afresh.
    const runner = (Object.keys(env).length === 0 ? this.spares.take(plan.gpuLayers !== 0) : null) ?? new RunnerProcess(opts.slots, this.opts.debug, env, false, this.opts.log);
    const entry: Live = { runner, gpus: plan.gpuLayers !== 0 ? gpus : [] };
    this.live.add(entry);
    runner.onIdleChange = () => this.spares.yieldTo(this.busy());
    void runner.exited.then(() => {
      this.live.delete(entry);
      this.spares.yieldTo(this.busy());
    });
    try {
      await runner.load(modelPath, opts, plan, signal, this.opts.states);
    } finally {
      this.spares.replaceWhenIdle();
    }
    const spare = this.spares.pid;
    if (spare !== null) runner.yielding([spare]);
    return runner;
  }

  /** Whether any runner has work in flight. */
  private busy(): boolean {
    for (const l of this.live) if (!l.runner.idle) return true;
    return false;
  }

  /** Ends the spare runner (loaded runners are the scheduler's to close). */
  close(): Promise<void> {
    return this.spares.close();
  }
}

/** Our GPU indexes are positions among the GPUs the daemon itself was allowed to see. */
function visibleList(inherited: string | undefined, ids: string[]): string {
  const parent = inherited?.split(",").map((s) => s.trim()).filter(Boolean);
  return ids.map((id) => (parent ? (parent[Number(id)] ?? id) : id)).join(",");
}

async function swapFree(): Promise<number> {
  try {
    const m = /^SwapFree:\s+(\d+) kB/m.exec(await readFile("/proc/meminfo", "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
