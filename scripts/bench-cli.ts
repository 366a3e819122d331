// CLI start-up (issue 17, DESIGN.md §9): wall time of `ollamats --version`, `ollamats list` and
// `ollamats run MODEL "hi"` against a running daemon, each measured next to `node -e 0` in the same
// rounds, so a busy machine shows up in both. `run` is compared with the daemon's own answer: the
// same /api/generate request made from this (already running) process over node:http, right
// before it in the same round; the figure is the median of those differences. The model answers
// with two tokens, so the comparison is not lost in generation time.
//
//   tsx scripts/bench-cli.ts        (or as a case of `npm run bench`; BENCH_CLI=0 skips it there)
//
// Beside them, the floor: the same two requests run makes (/api/show, then /api/generate printed
// as it streams) from a bare ES module that loads node:http and nothing else. run − the floor is
// what our code adds; the floor − the daemon's answer is Node's own start, node:http and the cold
// first request, which no CLI written for Node avoids.
//
// BENCH_CLI_ROUNDS (default 20) rounds; each round runs every command once, in turn. Medians are
// reported; targets: --version and list <= 150 ms, run <= the daemon's answer + 50 ms.
import { spawnSync } from "node:child_process";
import http from "node:http";
import { CLI, createModelFromFile, startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { makeTestModel } from "./make-test-model.js";
import { median } from "./bench-plan.js";

export const CLI_TARGETS = { versionMs: 150, listMs: 150, runOverDaemonMs: 50 };

const MODEL = "bench-cli";
const PROMPT = "hi";

export interface CliBench {
  rounds: number;
  /** Medians, ms. */
  nodeMs: number;
  versionMs: number;
  listMs: number;
  runMs: number;
  /** The daemon answering run's /api/generate, from a running client. */
  daemonAnswerMs: number;
  /** run − the daemon's answer: the median of the differences within each round. */
  runOverDaemonMs: number;
  /** The bare node:http script making run's two requests. */
  floorMs: number;
  /** run − the floor: what our code adds (the median of the differences within each round). */
  runOverFloorMs: number;
  samples: Record<"node" | "version" | "list" | "run" | "daemon" | "floor", number[]>;
  pass: { version: boolean; list: boolean; run: boolean };
}

function timeProcess(args: string[], env: NodeJS.ProcessEnv): number {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return ms;
}

/** run's requests from a fresh process with node:http only (run with --input-type=module). */
const FLOOR_SCRIPT = `
import http from "node:http";
const agent = new http.Agent({ keepAlive: true });
const post = (path, body) => new Promise((resolve, reject) => {
  const data = JSON.stringify(body);
  const req = http.request("http://" + process.env.OLLAMA_HOST + path, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(data) } }, resolve);
  req.on("error", reject);
  req.end(data);
});
let text = "";
for await (const chunk of await post("/api/show", { model: ${JSON.stringify(MODEL)} })) text += chunk;
JSON.parse(text);
let pending = "";
for await (const chunk of await post("/api/generate", { model: ${JSON.stringify(MODEL)}, prompt: ${JSON.stringify(PROMPT)} })) {
  pending += chunk;
  for (let nl; (nl = pending.indexOf("\\n")) >= 0; pending = pending.slice(nl + 1)) process.stdout.write(JSON.parse(pending.slice(0, nl)).response ?? "");
}
process.stdout.write("\\n\\n");
process.exit();
`;

/** The request `ollamats run MODEL "hi"` sends, answered in full, from this process. */
function daemonAnswer(d: TestDaemon): Promise<number> {
  const body = JSON.stringify({ model: MODEL, prompt: PROMPT });
  const t = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    // a new connection, as the CLI makes (and no idle one the daemon may have closed meanwhile)
    const req = http.request(`${d.url}/api/generate`, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(Number(process.hrtime.bigint() - t) / 1e6));
    });
    req.on("error", reject);
    req.end(body);
  });
}

export async function benchCli(opts: { rounds?: number; log?: (s: string) => void } = {}): Promise<CliBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = opts.rounds ?? Math.max(1, Number(process.env.BENCH_CLI_ROUNDS) || 20);
  const d = await startDaemon({ OLLAMA_KEEP_ALIVE: "-1" });
  try {
    const gguf = await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 });
    const created = await createModelFromFile(d.url, MODEL, gguf, { parameters: { seed: 1, temperature: 0, num_predict: 2 } });
    if (created.status !== 200) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    const env = { ...d.env };
    // warm: the model loaded, the files in the page cache
    await daemonAnswer(d);
    timeProcess([CLI, "run", MODEL, PROMPT], env);

    const samples: CliBench["samples"] = { node: [], version: [], list: [], run: [], daemon: [], floor: [] };
    for (let i = 0; i < rounds; i++) {
      samples.node.push(timeProcess(["-e", "0"], env));
      samples.version.push(timeProcess([CLI, "--version"], env));
      samples.list.push(timeProcess([CLI, "list"], env));
      samples.daemon.push(await daemonAnswer(d));
      samples.run.push(timeProcess([CLI, "run", MODEL, PROMPT], env));
      samples.floor.push(timeProcess(["--input-type=module", "-e", FLOOR_SCRIPT], env));
    }
    const m = (xs: number[]) => median(xs);
    const r: CliBench = {
      rounds,
      nodeMs: m(samples.node),
      versionMs: m(samples.version),
      listMs: m(samples.list),
      runMs: m(samples.run),
      daemonAnswerMs: m(samples.daemon),
      runOverDaemonMs: m(samples.run.map((x, i) => x - (samples.daemon[i] ?? NaN))),
      floorMs: m(samples.floor),
      runOverFloorMs: m(samples.run.map((x, i) => x - (samples.floor[i] ?? NaN))),
      samples,
      pass: { version: false, list: false, run: false },
    };
    r.pass = { version: r.versionMs <= CLI_TARGETS.versionMs, list: r.listMs <= CLI_TARGETS.listMs, run: r.runOverDaemonMs <= CLI_TARGETS.runOverDaemonMs };
    const f = (x: number) => x.toFixed(0).padStart(5);
    const v = (ok: boolean) => (ok ? "PASS" : "MISS");
    log(`  medians of ${rounds} rounds (ms)           value   - node -e 0   target`);
    log(`  node -e 0                               ${f(r.nodeMs)}`);
    log(`  ollamats --version                      ${f(r.versionMs)}   ${f(r.versionMs - r.nodeMs)}       <= ${CLI_TARGETS.versionMs}  ${v(r.pass.version)}`);
    log(`  ollamats list                           ${f(r.listMs)}   ${f(r.listMs - r.nodeMs)}       <= ${CLI_TARGETS.listMs}  ${v(r.pass.list)}`);
    log(`  ollamats run ${MODEL} "${PROMPT}"              ${f(r.runMs)}   ${f(r.runMs - r.nodeMs)}`);
    log(`  the daemon's answer to it (in-process)  ${f(r.daemonAnswerMs)}`);
    log(`  run − the daemon's answer               ${f(r.runOverDaemonMs)}   ${f(r.runOverDaemonMs - r.nodeMs)}       <= ${CLI_TARGETS.runOverDaemonMs}  ${v(r.pass.run)}`);
    log(`  floor: run's two requests, bare node:http ${f(r.floorMs)}   ${f(r.floorMs - r.nodeMs)}`);
    log(`  run − the floor (what our code adds)    ${f(r.runOverFloorMs)}`);
    return r;
  } catch (err) {
    log(`  daemon log:\n${d.logs().slice(-3000)}`);
    throw err;
  } finally {
    await d.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchCli().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
