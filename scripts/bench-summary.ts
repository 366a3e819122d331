// The one table `npm run bench` ends with: every figure of every case, daemon and direct side
// where there are two, their ratio, the target and PASS/MISS ("-" = reported only, "n/a" = the
// case was skipped or failed). The rows also go into .cache/bench-latest.json as `suite`.
import type { KvBench } from "./bench-kv.js";
import type { ParallelBench } from "./bench-parallel.js";
import type { ProfileBench, ProfileFigure } from "./bench-profile.js";

export interface SuiteRow {
  figure: string;
  daemon: string;
  direct: string;
  ratio: string;
  target: string;
  verdict: "PASS" | "MISS" | "-" | "n/a";
}

/** The figures of the first (daemon-vs-direct) case that the table shows. */
export interface MainFigures {
  decodeRatio: number;
  daemonDecodeTokPerS: number;
  directDecodeTokPerS: number;
  ttftOverheadMs: number;
  ttftPairs: { daemonMs: number; directMs: number };
  daemonTtftMs: number;
  directTtftMs: number;
  daemonIdleRssMiB: number;
}

export interface SuiteInput {
  main: MainFigures;
  targets: { decodeRatio: number; ttftOverheadMs: number; idleRssMiB: number };
  profile: ProfileBench | null;
  kv: KvBench | null;
  parallel: ParallelBench | null;
  prefix: { ratio: number; whileBusyRatio: number; otherSlotRatio: number; afterSwitchRatio: number; afterSwitchPromptRatio: number; targets: { issue3: number; issue7: number } } | null;
  pull: { ratio: number; pullMBps: number; undiciMBps: number } | null;
  pullTarget: number;
}

const fx = (d: number) => (x: number | null | undefined) => (x == null || !Number.isFinite(x) ? "-" : x.toFixed(d));
const f0 = fx(0);
const f1 = fx(1);
const f2 = fx(2);
const f3 = fx(3);

function row(figure: string, daemon: string, direct: string, ratio: string, target = "", verdict: SuiteRow["verdict"] = "-"): SuiteRow {
  return { figure, daemon, direct, ratio, target, verdict };
}

const atLeast = (x: number, t: number) => (!Number.isFinite(x) ? "n/a" : x >= t ? "PASS" : "MISS");
const atMost = (x: number, t: number) => (!Number.isFinite(x) ? "n/a" : x <= t ? "PASS" : "MISS");
const missing = (figure: string) => row(figure, "-", "-", "-", "", "n/a");

export function suiteRows(s: SuiteInput): SuiteRow[] {
  const { main: m, targets: t } = s;
  const rows: SuiteRow[] = [
    row("decode tok/s, ~32-token prompt (decode case)", f2(m.daemonDecodeTokPerS), f2(m.directDecodeTokPerS), f2(m.decodeRatio), `>= ${t.decodeRatio}`, atLeast(m.decodeRatio, t.decodeRatio)),
    row("first token ms, 8-token prompts, back-to-back pairs; overhead = median diff", f1(m.ttftPairs.daemonMs), f1(m.ttftPairs.directMs), Number.isFinite(m.ttftOverheadMs) ? `${m.ttftOverheadMs >= 0 ? "+" : ""}${f1(m.ttftOverheadMs)} ms` : "-", `<= ${t.ttftOverheadMs} ms`, atMost(m.ttftOverheadMs, t.ttftOverheadMs)),
    row("first token ms, ~32-token prompts (rounds)", f1(m.daemonTtftMs), f1(m.directTtftMs), f2(m.daemonTtftMs / m.directTtftMs), ""),
    row("daemon idle RSS, MB", f0(m.daemonIdleRssMiB), "", "", `<= ${t.idleRssMiB}`, atMost(m.daemonIdleRssMiB, t.idleRssMiB)),
  ];
  const p = s.profile;
  if (p) {
    const fig = (name: string, x: ProfileFigure, f: (v: number) => string, target?: number) =>
      row(name, f(x.daemon), f(x.direct), f2(x.ratio), target === undefined ? "" : `>= ${target}`, target === undefined ? "-" : atLeast(x.ratio, target));
    rows.push(
      fig(`prompt eval tok/s, ${p.promptTokens.p256}-token prompt`, p.prompt256TokPerS, f1),
      fig(`prompt eval tok/s, ${p.promptTokens.p1024}-token prompt`, p.prompt1024TokPerS, f1),
      fig(`first token ms, ${p.promptTokens.p256}-token prompt`, p.ttft256Ms, f0),
      row(
        "  first token 256, daemon / llama-server (derived: ratio x 0.734)",
        "",
        "",
        f3(p.llamaServer.daemonOverLlamaServerDerived),
        `<= ${p.llamaServer.target}`,
        atMost(p.llamaServer.daemonOverLlamaServerDerived, p.llamaServer.target),
      ),
      fig(`decode tok/s, empty context (${p.promptTokens.empty}-token prompt)`, p.decodeTokPerS.empty, f2, t.decodeRatio),
      fig(`decode tok/s after ${p.promptTokens.p256} prompt tokens`, p.decodeTokPerS.p256, f2, t.decodeRatio),
      fig(`decode tok/s after ${p.promptTokens.p1024} prompt tokens`, p.decodeTokPerS.p1024, f2, t.decodeRatio),
      row("  same text daemon / direct (profile)", p.sameText ? "yes" : "NO", "", "", "identical", p.sameText ? "PASS" : "MISS"),
    );
  } else rows.push(missing("profile (prompt / first token / decode by context)"));
  const q = s.parallel;
  if (q) {
    q.levels.forEach((l, i) =>
      rows.push(row(`aggregate tok/s, ${l.streams} stream(s)`, f2(l.aggregateTokPerS), f2(q.direct?.levels[i]?.aggregateTokPerS), f2(q.daemonOverDirect[i]))),
    );
    rows.push(row("  4 streams / 1 stream", f2(q.ratio4), f2(q.direct?.ratio4), "", `>= ${q.target4} (daemon)`, atLeast(q.ratio4, q.target4)));
  } else rows.push(missing("aggregate tok/s at 1 / 2 / 4 streams"));
  const x = s.prefix;
  if (x) {
    const t = `<= ${x.targets.issue7} (issue 7)`;
    rows.push(row("repeated-prefix ratio, same slot (2nd / 1st first token)", f3(x.ratio), "", "", t, atMost(x.ratio, x.targets.issue7)));
    rows.push(row("  other slot (its own given away; from the snapshot)", f3(x.otherSlotRatio), "", "", t, atMost(x.otherSlotRatio, x.targets.issue7)));
    rows.push(row("  while another stream decodes (waits for its step)", f3(x.whileBusyRatio), "", "", "-", "-"));
    rows.push(row("  after a model switch, without the reload", f3(x.afterSwitchPromptRatio), "", "", t, atMost(x.afterSwitchPromptRatio, x.targets.issue7)));
    rows.push(row("  after a model switch, reload included", f3(x.afterSwitchRatio), "", "", "-", "-"));
  } else rows.push(missing("repeated-prefix ratio"));
  const k = s.kv;
  if (k) {
    const base = k.settings[0]!;
    rows.push(row(`KV ${base.name} (default): prompt tok/s, 256 tokens`, f1(base.promptTokPerS), "", ""));
    rows.push(row(`KV ${base.name} (default): decode tok/s after them`, f2(base.decodeTokPerS), "", ""));
    for (const [i, st] of k.settings.entries()) {
      if (i === 0) continue;
      rows.push(row(`KV ${st.name}: prompt tok/s (ratio vs default)`, f1(st.promptTokPerS), "", f2(st.promptRel)));
      rows.push(row(`KV ${st.name}: decode tok/s (ratio vs default)`, f2(st.decodeTokPerS), "", f2(st.decodeRel)));
      // Also against the settings between the default and this one (q8_0 vs FA on, f16: the cache type alone).
      const vs = k.settings.slice(1, i).map((o) => ` (as ${o.name}: ${st.sameTextAs[o.name] ? "yes" : "no"})`).join("");
      rows.push(row(`KV ${st.name}: same text as the default${vs}`, st.sameText ? "yes" : `no (${st.commonPrefixChars} chars same)`, "", "", "(quality proxy)"));
    }
  } else rows.push(missing("flash attention / KV cache matrix"));
  const u = s.pull;
  if (u) rows.push(row("pull MB/s vs plain undici", f1(u.pullMBps), f1(u.undiciMBps), f2(u.ratio), `>= ${s.pullTarget}`, atLeast(u.ratio, s.pullTarget)));
  else rows.push(missing("pull throughput"));
  return rows;
}

export function printSuite(rows: SuiteRow[], log: (s: string) => void): void {
  const all = [["figure", "daemon", "direct", "ratio", "target", "verdict"], ...rows.map((r) => [r.figure, r.daemon, r.direct, r.ratio, r.target, r.verdict])];
  const w = all[0]!.map((_, c) => Math.max(...all.map((r) => r[c]!.length)));
  for (const r of all) log(r.map((cell, c) => (c === 0 || c >= 4 ? cell.padEnd(w[c]!) : cell.padStart(w[c]!))).join("  ").trimEnd());
}
