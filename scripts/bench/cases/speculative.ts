// Speculative decoding through the daemon (issue 16 item 4): decode tok/s with a DRAFT model or
// prompt lookup against the same model without, and the acceptance rate (ollamats_draft_tokens_total
// from /metrics: accepted ÷ proposed). Bounds: the model as its own draft (every proposal is what
// the model would choose: the most a draft can agree, at the cost of running the model twice),
// and an unrelated 2-layer draft (same shape and vocabulary, other weights: it agrees only by
// chance). On random weights a cut of the model's own layers agrees no better than that, so a
// well-matched cheap draft is emulated: a 1B-shaped model whose blocks from the third up barely
// change its output (make-test-model's quietFrom), with its first 2 layers as the draft: it costs
// what the 1B model costs, its draft ~1/6 of that. Prompt lookup gets a quote-heavy prompt: a
// fresh prompt followed by the model's own greedy continuation of it. Greedy, 64 tokens (16 with
// --quick); OLLAMATS_DRAFT_P_MIN=0, since random weights are never confident enough to propose.
import { readFile } from "node:fs/promises";
import { makeTestModel } from "../../make-test-model.js";
import { sha256File } from "../../../test/helpers/daemon.js";
import { Scrape } from "../../../test/helpers/prometheus.js";
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { BenchDaemon, decodeRate, fmt, freshPrompt, median, sleep } from "../support.js";
import { daemonOptions } from "./engine.js";

const CONTEXT = 2048;

interface Variant {
  /** The model (with or without a draft) and the options it runs with. */
  model: string;
  label: string;
  options?: Record<string, unknown>;
  /** Prompt lookup's runs use the quote-heavy prompt (and so does their "off" reference). */
  quote?: boolean;
  /** What its speed is compared with (absent: it is a reference itself). */
  reference?: Variant;
}

/** Uploads the draft's GGUF and creates `name` as `file` plus that draft. */
async function createWithDraft(b: BenchDaemon, name: string, file: string, draft: string): Promise<void> {
  const digest = await sha256File(draft);
  const up = await fetch(`${b.d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(draft) });
  if (up.status !== 200 && up.status !== 201) throw new Error(`upload ${draft}: ${up.status}`);
  const model = await sha256File(file);
  const r = await fetch(`${b.d.url}/api/create`, {
    method: "POST",
    body: JSON.stringify({ model: name, files: { "model.gguf": model }, draft_files: { "draft.gguf": digest }, stream: false }),
  });
  if (!r.ok) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
}

async function proposals(b: BenchDaemon, model: string): Promise<{ accepted: number; rejected: number }> {
  const s = new Scrape(await (await fetch(`${b.d.url}/metrics`)).text());
  if (!s.families.has("ollamats_draft_tokens_total")) return { accepted: 0, rejected: 0 };
  const n = (result: string) => s.value("ollamats_draft_tokens_total", { model: `${model}:latest`, result });
  return { accepted: n("accepted"), rejected: n("rejected") };
}

interface Sample {
  rate: number;
  accepted: number;
  proposed: number;
  text: string;
}

async function sample(b: BenchDaemon, v: Variant, prompt: string, predict: number): Promise<Sample> {
  const before = await proposals(b, v.model);
  await sleep(500);
  const g = await b.generate({ model: v.model, prompt, raw: true, keep_alive: "10m", options: { ...daemonOptions(CONTEXT, predict), ...v.options } });
  const after = await proposals(b, v.model);
  const accepted = after.accepted - before.accepted;
  return { rate: decodeRate(g.chunkTimes), accepted, proposed: accepted + after.rejected - before.rejected, text: g.text };
}

async function run(ctx: CaseContext): Promise<Row[]> {
  const predict = ctx.quick ? 16 : 64;
  // Drafts of the default 1B-shaped model; another --model needs drafts of its own vocabulary.
  const [unrelated, cut, quiet] = await Promise.all([
    makeTestModel({ shape: "1b", type: "Q4_0", seed: 2, layers: 2 }),
    makeTestModel({ shape: "1b", type: "Q4_0", seed: 1, layers: 2 }),
    makeTestModel({ shape: "1b", type: "Q4_0", seed: 1, quietFrom: 2 }),
  ]);
  const b = await BenchDaemon.start({ OLLAMATS_DRAFT_P_MIN: "0" }, { off: ctx.modelPath, "quiet-off": quiet });
  const offPlain: Variant = { model: "off", label: "off" };
  const offQuiet: Variant = { model: "quiet-off", label: "well-matched pair's model, off" };
  const offQuote: Variant = { model: "off", label: "off, quote-heavy prompt", quote: true };
  const one = { draft_num_predict: 1 };
  const variants: Variant[] = [
    offPlain,
    { model: "self", label: "same model as its draft, 4 per step", reference: offPlain },
    { model: "self", label: "same model as its draft, 1 per step", options: one, reference: offPlain },
    { model: "unrelated", label: "unrelated 2-layer draft, 4 per step", reference: offPlain },
    { model: "unrelated", label: "unrelated 2-layer draft, 1 per step", options: one, reference: offPlain },
    offQuiet,
    { model: "quiet", label: "well-matched 2-layer draft, 4 per step", reference: offQuiet },
    { model: "quiet", label: "well-matched 2-layer draft, 1 per step", options: one, reference: offQuiet },
    offQuote,
    { model: "off", label: "prompt lookup, quote-heavy prompt, 4 per step", options: { prompt_lookup: true }, quote: true, reference: offQuote },
    { model: "off", label: "prompt lookup, quote-heavy prompt, 1 per step", options: { prompt_lookup: true, ...one }, quote: true, reference: offQuote },
  ];
  const samples = new Map<Variant, Sample[]>(variants.map((v) => [v, []]));
  try {
    await createWithDraft(b, "self", ctx.modelPath, ctx.modelPath);
    await createWithDraft(b, "unrelated", ctx.modelPath, unrelated);
    await createWithDraft(b, "quiet", quiet, cut);
    await b.generate({ model: "off", prompt: freshPrompt(16), raw: true, options: daemonOptions(CONTEXT, 2) }); // warm
    for (let r = 0; r < ctx.rounds; r++) {
      const prompt = freshPrompt(ctx.quick ? 32 : 128);
      // The quote-heavy prompt: a fresh prompt and the model's own greedy continuation of it.
      const seed = freshPrompt(ctx.quick ? 32 : 128);
      const quote = seed + (await b.generate({ model: "off", prompt: seed, raw: true, options: daemonOptions(CONTEXT, 2 * predict) })).text;
      for (const v of variants) {
        const p = v.quote ? quote : prompt;
        // Every run starts the same way, the reference too: a runner just loaded, with the prompt
        // in the slot state the unload before it kept. The same prompt and greedy sampling can
        // give another text after another cache history (evaluated afresh, or taken from the
        // cache with its last token evaluated again alone; KV cells in another order), with
        // speculation or without: that is the engine's floating point, not what is compared here.
        if (!v.reference) await b.generate({ model: v.model, prompt: p, raw: true, keep_alive: "10m", options: daemonOptions(CONTEXT, 1) });
        await b.generate({ model: v.model, prompt: "", keep_alive: 0 });
        const s = await sample(b, v, p, predict);
        samples.get(v)?.push(s);
      }
      ctx.log(`  round ${r + 1}: ${variants.map((v) => `${v.label} ${fmt(samples.get(v)?.at(-1)?.rate ?? NaN)}`).join("; ")} tok/s`);
    }
  } finally {
    await b.stop();
  }
  // Greedy text is the model's either way, up to the CPU kernels' batch-size-dependent rounding:
  // checking proposals evaluates 2-5 tokens per batch where plain decoding evaluates one, which
  // can flip a near tie on random weights (llama.cpp's own results vary with the batch size).
  let same = 0;
  let runs = 0;
  for (const v of variants) {
    if (!v.reference) continue;
    (samples.get(v) ?? []).forEach((s, r) => {
      const ref = samples.get(v.reference as Variant)?.[r]?.text;
      runs++;
      if (s.text === ref) same++;
      else ctx.log(`  round ${r + 1}, ${v.label}: ${JSON.stringify(s.text)} where off wrote ${JSON.stringify(ref)}`);
    });
  }
  const rateOf = (v: Variant) => median((samples.get(v) ?? []).map((s) => s.rate));
  const rows = variants.flatMap((v): Row[] => {
    if (!v.reference) return [];
    const ss = samples.get(v) ?? [];
    const rate = rateOf(v);
    const proposed = ss.reduce((n, s) => n + s.proposed, 0);
    const accepted = ss.reduce((n, s) => n + s.accepted, 0);
    const reference = rateOf(v.reference);
    return [
      { figure: `decode tok/s, ${v.label} (vs off)`, daemon: rate, direct: reference, value: rate / reference, note: "direct = off" },
      { figure: `acceptance, ${v.label}`, value: proposed > 0 ? accepted / proposed : NaN, note: `${accepted} of ${proposed}` },
    ];
  });
  return [...rows, { figure: "greedy text the same as off (runs)", value: same / runs, note: `${same} of ${runs}` }];
}

export const speculativeCase: BenchCase = {
  name: "speculative",
  what: "decode tok/s and acceptance vs off: the model as its own draft, an unrelated draft, a well-matched cheap draft, prompt lookup",
  run,
};
