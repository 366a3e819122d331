// Prompt evaluation, first token and decode through the daemon against plain node-llama-cpp with
// its defaults (direct-child.ts), at 256, 1,024 and 4,096 prompt tokens: a fresh prompt every
// round, the same one on both sides, sides taking turns (which goes first alternates), each
// process idle while the other works. Greedy, no repeat penalty: the texts must be the same.
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { completionRoom, Direct } from "../direct.js";
import { BenchDaemon, ForeignLoad, fmt, freshSeed, median, sleep } from "../support.js";

/** Room for the longest prompt and its reply, the same on both sides, within what LlamaCompletion
 *  evaluates of a prompt (completionRoom; direct-child.ts refuses a prompt it would cut). */
function contextFor(sizes: number[], predict: number): number {
  const need = Math.max(...sizes) + predict + 64;
  let size = Math.ceil(need / 256) * 256;
  while (completionRoom(size) < need) size += 256;
  return size;
}

interface Sample {
  promptTokens: number;
  ttftMs: number;
  /** Daemon: first token minus the runner's own prompt_eval_duration (HTTP, routing, scheduler,
   *  IPC, tokenizing): measured within one request, so free of the drift between runs. */
  pathMs: number;
  promptRate: number;
  decodeRate: number;
  text: string;
  foreign: number;
}

export function daemonOptions(numCtx: number, numPredict: number): Record<string, unknown> {
  return { num_ctx: numCtx, num_predict: numPredict, temperature: 0, repeat_penalty: 1, seed: 42 };
}

/** Before each run, a pause: the other side's work has ended for a moment, as it would have for a
 *  user (the runner's thread budget sees the cores free after two quarter-second windows). */
const SETTLE_MS = 1000;

async function daemonSample(b: BenchDaemon, numCtx: number, prompt: string, predict: number, load: ForeignLoad): Promise<Sample> {
  await sleep(SETTLE_MS);
  await load.begin();
  const g = await b.generate({ model: "m", prompt, raw: true, keep_alive: "10m", options: daemonOptions(numCtx, predict) });
  const foreign = await load.end();
  const f = g.final as { prompt_eval_count: number; prompt_eval_duration: number; eval_count: number };
  const last = g.chunkTimes.at(-1) ?? g.tFirst;
  return {
    promptTokens: f.prompt_eval_count,
    ttftMs: g.tFirst - g.tSent,
    pathMs: g.tFirst - g.tSent - f.prompt_eval_duration / 1e6,
    promptRate: f.prompt_eval_count / (f.prompt_eval_duration / 1e9),
    decodeRate: (f.eval_count - 1) / ((last - g.tFirst) / 1000),
    text: g.text,
    foreign,
  };
}

async function directSample(d: Direct, prompt: string, predict: number, load: ForeignLoad): Promise<Sample> {
  await sleep(SETTLE_MS);
  await load.begin();
  const c = await d.complete(prompt, predict);
  const foreign = await load.end();
  return {
    promptTokens: c.promptTokens,
    ttftMs: c.tFirst - c.t0,
    pathMs: 0,
    promptRate: c.promptTokens / ((c.tFirst - c.t0) / 1000),
    decodeRate: (c.tokens - 1) / ((c.tLast - c.tFirst) / 1000),
    text: c.text,
    foreign,
  };
}

async function run(ctx: CaseContext): Promise<Row[]> {
  const sizes = ctx.promptTokens;
  const predict = ctx.quick ? 16 : 64;
  const numCtx = contextFor(sizes, predict);
  const b = await BenchDaemon.start({}, { m: ctx.modelPath });
  const d = Direct.start();
  const load = new ForeignLoad(async () => [...(await b.pids()), d.pid]);
  const samples = new Map<number, { daemon: Sample[]; direct: Sample[] }>(sizes.map((s) => [s, { daemon: [], direct: [] }]));
  try {
    await d.open(ctx.modelPath, numCtx);
    // Warm-up on both sides (first evaluation allocates buffers).
    // Prompts are fitted to the model's tokenizer, so "256 tokens" is 256 with any model.
    const warm = (await d.fit(freshSeed(), 32)).prompt;
    await daemonSample(b, numCtx, warm, 4, load);
    await directSample(d, warm, 4, load);
    for (let r = 0; r < ctx.rounds; r++) {
      for (const size of sizes) {
        const { prompt } = await d.fit(freshSeed(), size);
        const s = samples.get(size)!;
        const sides = [() => daemonSample(b, numCtx, prompt, predict, load).then((x) => s.daemon.push(x)), () => directSample(d, prompt, predict, load).then((x) => s.direct.push(x))];
        for (const side of r % 2 === 0 ? sides : sides.reverse()) await side();
        const dm = s.daemon.at(-1)!;
        const dr = s.direct.at(-1)!;
        ctx.log(
          `  round ${r + 1}, ${size} tokens: first token ${fmt(dm.ttftMs, 0)} / ${fmt(dr.ttftMs, 0)} ms, prompt ${fmt(dm.promptRate, 1)} / ${fmt(dr.promptRate, 1)} tok/s, ` +
            `decode ${fmt(dm.decodeRate)} / ${fmt(dr.decodeRate)} tok/s (daemon / direct), same text: ${dm.text === dr.text}, other processes ${fmt(dm.foreign)} / ${fmt(dr.foreign)} cores` +
            (dm.promptTokens !== dr.promptTokens ? ` (prompt tokens differ: ${dm.promptTokens} / ${dr.promptTokens})` : ""),
        );
      }
    }
  } finally {
    await d.stop();
    await b.stop();
  }
  const rows: Row[] = [];
  for (const size of sizes) {
    const { daemon, direct } = samples.get(size)!;
    const m = (xs: Sample[], k: keyof Omit<Sample, "text">) => median(xs.map((x) => x[k]));
    const pairs = daemon.map((x, i) => x.ttftMs - direct[i]!.ttftMs);
    const foreign = Math.max(m(daemon, "foreign"), m(direct, "foreign"));
    rows.push(
      ratioRow(`prompt eval, ${size}-token prompt (tok/s)`, m(daemon, "promptRate"), m(direct, "promptRate"), "≥ 0.98", foreign),
      ratioRow(`decode after ${size} prompt tokens (tok/s)`, m(daemon, "decodeRate"), m(direct, "decodeRate"), "≥ 0.98", foreign),
      {
        figure: `first token, ${size}-token prompt (ms): median of daemon − direct per round`,
        daemon: m(daemon, "ttftMs"),
        direct: m(direct, "ttftMs"),
        value: median(pairs),
        target: size === 256 ? "≤ 5 ms" : undefined,
        pass: size === 256 ? median(pairs) <= 5 : undefined,
        foreign,
      },
      { figure: `first token, ${size}-token prompt: the daemon's path (first token − the runner's prompt_eval_duration), ms`, daemon: m(daemon, "pathMs"), foreign },
      {
        figure: `same text, ${size}-token prompt (rounds)`,
        value: daemon.filter((x, i) => x.text === direct[i]!.text).length,
        note: `of ${daemon.length}`,
      },
    );
  }
  return rows;
}

export function ratioRow(figure: string, daemon: number, direct: number, target: string | undefined, foreign?: number): Row {
  const ratio = daemon / direct;
  const min = target ? Number(/≥ ([\d.]+)/.exec(target)?.[1]) : NaN;
  return { figure, daemon, direct, value: ratio, target, pass: Number.isFinite(min) ? ratio >= min : undefined, foreign };
}

export const engineCase: BenchCase = {
  name: "engine",
  what: "prompt eval, first token and decode at 256/1,024/4,096 prompt tokens vs plain node-llama-cpp defaults",
  run,
};
