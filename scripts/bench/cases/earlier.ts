// The cases of the earlier bench, behind the registry: parallel streams (direct side: plain
// node-llama-cpp, one context of 4 sequences, its default batching), prefix reuse with 2 slots,
// the flash attention / KV cache matrix (daemon only), pull throughput (vs plain undici), remote
// models (vs llama-server called directly) and the CLI's start-up.
import { benchCli, CLI_TARGETS } from "../../bench-cli.js";
import { benchKv } from "../../bench-kv.js";
import { benchParallel } from "../../bench-parallel.js";
import { benchPrefix } from "../../bench-prefix.js";
import { benchPull } from "../../bench-pull.js";
import { benchRemote } from "../../bench-remote.js";
import type { BenchCase, CaseContext, Row } from "../registry.js";

/** The earlier cases wait for a quiet machine before each measurement; --quick does not. */
const quietWait = (ctx: CaseContext) => (ctx.quick ? 0 : 10_000);

export const parallelCase: BenchCase = {
  name: "parallel",
  what: "aggregate tok/s at 1, 2 and 4 streams (NUM_PARALLEL=4), daemon and plain node-llama-cpp",
  async run(ctx) {
    const p = await benchParallel({ modelPath: ctx.modelPath, log: ctx.log, quietWaitMs: quietWait(ctx), rounds: ctx.rounds, tokens: ctx.quick ? 8 : 64 });
    const rows: Row[] = [{ figure: "4 streams / 1 stream, aggregate tok/s", daemon: p.ratio4, direct: p.direct?.ratio4, value: p.ratio4, target: "≥ 1.5", pass: p.ratio4 >= 1.5 }];
    p.daemonOverDirect.forEach((v, i) => rows.push({ figure: `aggregate tok/s at ${[1, 2, 4][i]} stream(s), daemon / direct`, value: v }));
    return rows;
  },
};

export const prefixCase: BenchCase = {
  name: "prefix",
  what: "a ~1,000-token prefix again: same slot, while another decodes, another slot, after a model switch (NUM_PARALLEL=2)",
  async run(ctx) {
    const p = await benchPrefix({ modelPath: ctx.modelPath, log: ctx.log, quietWaitMs: quietWait(ctx), rounds: ctx.rounds, prefixWords: ctx.quick ? 60 : 350 });
    const row = (figure: string, value: number, target?: number): Row => ({ figure, value, ...(target ? { target: `≤ ${target}`, pass: value <= target } : {}) });
    return [
      row("prefix again, same slot: first token / cold", p.ratio, 0.01),
      row("prefix again, in another slot (from the snapshot)", p.otherSlotRatio, 0.01),
      row("prefix again, after a model switch (load taken out)", p.afterSwitchPromptRatio, 0.01),
      row("prefix again, while another stream decodes", p.whileBusyRatio),
    ];
  },
};

export const kvCase: BenchCase = {
  name: "kv",
  what: "flash attention and KV cache types: prompt and decode speed vs the default (daemon only)",
  async run(ctx) {
    const k = await benchKv({ modelPath: ctx.modelPath, log: ctx.log, quietWaitMs: quietWait(ctx), rounds: ctx.rounds, tokens: ctx.quick ? 8 : 64 });
    return k.settings.slice(1).map((s) => ({ figure: `${s.name}: prompt / decode vs FA off, f16`, value: s.promptRel, note: `decode ${s.decodeRel.toFixed(2)}, same text: ${s.sameText}` }));
  },
};

export const pullCase: BenchCase = {
  name: "pull",
  what: "pull throughput from a loopback registry vs a plain undici download",
  async run(ctx) {
    const p = await benchPull({ rounds: ctx.rounds, log: ctx.log });
    return [{ figure: "pull / plain undici (MB/s)", daemon: p.pullMBps, direct: p.undiciMBps, value: p.ratio, target: "≥ 0.8", pass: p.ratio >= 0.8 }];
  },
};

/** Issue 14's targets for a remote model against its upstream called directly. */
const REMOTE_TARGETS = { firstTokenMs: 3, decodeRatio: 0.98 };

export const remoteCase: BenchCase = {
  name: "remote",
  what: "remote models in front of llama-server vs the upstream directly; 32 streams; prefix affinity vs round robin",
  async run(ctx) {
    const r = await benchRemote({ log: ctx.log, ...(ctx.quick ? { rounds: 2, firstPairs: 6, warmup: 6 } : {}) });
    return [
      { figure: `remote model first token − llama-server directly, warm (ms, median of ${r.firstPairs} pairs)`, daemon: r.remoteFirstMs, direct: r.directFirstMs, value: r.firstTokenOverheadMs, target: `≤ ${REMOTE_TARGETS.firstTokenMs} ms`, pass: r.firstTokenOverheadMs <= REMOTE_TARGETS.firstTokenMs },
      { figure: "remote model first token − llama-server directly, first 40 pairs after start (ms)", value: r.coldFirstTokenOverheadMs },
      { figure: "remote model decode / llama-server directly (tok/s)", daemon: r.remoteDecodeTokPerS, direct: r.directDecodeTokPerS, value: r.decodeRatio, target: `≥ ${REMOTE_TARGETS.decodeRatio}`, pass: r.decodeRatio >= REMOTE_TARGETS.decodeRatio },
      { figure: "remote model: the front's CPU per streamed token (µs)", value: r.frontCpuUsPerToken },
      { figure: `${r.concurrent} concurrent remote streams: errors`, value: r.concurrentErrors, target: "0", pass: r.concurrentErrors === 0 },
      // daemon = affinity, direct = round robin (issue 14: affinity must beat it clearly on both)
      {
        figure: "prefix affinity vs round robin: llama-server prompt-cache hit rate",
        daemon: r.affinity.hitRate,
        direct: r.roundRobin.hitRate,
        value: r.affinity.hitRate - r.roundRobin.hitRate,
        target: "affinity higher",
        pass: r.affinity.hitRate > r.roundRobin.hitRate,
      },
      {
        figure: "prefix affinity vs round robin: mean first token of the conversations (ms)",
        daemon: r.affinity.meanFirstMs,
        direct: r.roundRobin.meanFirstMs,
        value: r.affinity.meanFirstMs / r.roundRobin.meanFirstMs,
        target: "affinity lower",
        pass: r.affinity.meanFirstMs < r.roundRobin.meanFirstMs,
      },
    ];
  },
};

export const cliCase: BenchCase = {
  name: "cli",
  what: "CLI start-up: --version, list, run against a running daemon",
  async run(ctx) {
    const c = await benchCli({ log: ctx.log, rounds: ctx.quick ? 3 : 20 });
    return [
      { figure: "ollamats --version (ms)", value: c.versionMs, target: `≤ ${CLI_TARGETS.versionMs}`, pass: c.pass.version },
      { figure: "ollamats list (ms)", value: c.listMs, target: `≤ ${CLI_TARGETS.listMs}`, pass: c.pass.list },
      { figure: "ollamats run − the daemon's answer (ms)", value: c.runOverDaemonMs, target: `≤ ${CLI_TARGETS.runOverDaemonMs}`, pass: c.pass.run },
      { figure: "ollamats run − bare node:http making its requests (ms)", value: c.runOverFloorMs },
    ];
  },
};
