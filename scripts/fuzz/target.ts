// The daemon under test: one the fuzzer starts (a temporary store, registries reachable only on
// loopback, restartable after a crash) or one already running (--url). Its fixtures are two
// models, `fuzz-base` and `fuzz-embed`; after each case every model the case made is deleted and
// a fixture the case damaged is created again.
import { readdir, readFile, rm } from "node:fs/promises";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { childPids, createModelFromFile, sha256File, startDaemon, type TestDaemon } from "../../test/helpers/daemon.js";
import { makeTestModel } from "../make-test-model.js";
import { NOWHERE, type Fixtures } from "./routes.js";

export const FIXTURE_NAMES = { base: "fuzz-base", embed: "fuzz-embed" } as const;
/** Every completion on the fixtures stops after 4 tokens unless a request asks for more. */
const FIXTURE_PARAMS = { parameters: { num_predict: 4 } };

export interface Target {
  url: string;
  /** Set when the fuzzer started the daemon. */
  own?: { daemon: TestDaemon; home: string };
  fixtures: Fixtures;
  /** Model names (as /api/tags shows them) with their digests right after setup. */
  expected: Map<string, string>;
  /** Blob files in the store right after setup (own daemon only). */
  blobs: Set<string>;
  /** Runner processes seen under the daemon, ended with it if it dies. */
  runners: Set<number>;
  /** Fixtures this run created in a daemon it did not start (deleted at the end). */
  created: string[];
}

async function tags(url: string): Promise<Array<{ name: string; digest: string }>> {
  const r = await fetch(`${url}/api/tags`);
  if (!r.ok) throw new Error(`GET /api/tags answered ${r.status}`);
  return ((await r.json()) as { models: Array<{ name: string; digest: string }> }).models;
}

async function fixtureFiles(): Promise<{ base: string; embed: string }> {
  return {
    base: await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 }),
    embed: await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1, embedding: true }),
  };
}

/** The fixtures' names and blob digest (the same for every run: the generated files are). */
export async function fixtures(): Promise<Fixtures> {
  const files = await fixtureFiles();
  return { base: FIXTURE_NAMES.base, embed: FIXTURE_NAMES.embed, baseBlob: await sha256File(files.base) };
}

async function createFixture(url: string, name: string, file: string): Promise<void> {
  const r = await createModelFromFile(url, name, file, FIXTURE_PARAMS);
  if (r.status !== 200) throw new Error(`creating fixture ${name} failed: ${r.status} ${await r.text()}`);
}

async function setUp(url: string, own: Target["own"]): Promise<Target> {
  const files = await fixtureFiles();
  const have = new Map((await tags(url)).map((m) => [m.name, m.digest]));
  const created: string[] = [];
  for (const [name, file] of [[FIXTURE_NAMES.base, files.base], [FIXTURE_NAMES.embed, files.embed]] as const) {
    if (have.has(`${name}:latest`)) continue;
    await createFixture(url, name, file);
    created.push(name);
  }
  const expected = new Map((await tags(url)).map((m) => [m.name, m.digest]));
  const blobs = own ? new Set(await readdir(path.join(own.daemon.models, "blobs"))) : new Set<string>();
  return { url, ...(own ? { own } : {}), fixtures: await fixtures(), expected, blobs, runners: new Set(), created };
}

/** Starts a daemon of our own: a fresh store and HOME, and every non-loopback registry behind a
 *  proxy that does not exist, so no request of a case can leave the machine. */
export async function startOwn(): Promise<Target> {
  const home = await mkdtemp(path.join(os.tmpdir(), "ollamats-fuzz-home-"));
  const daemon = await startDaemon({
    HOME: home,
    OLLAMATS_TRANSFER_BACKOFF_MS: "20",
    HTTP_PROXY: `http://${NOWHERE}`,
    HTTPS_PROXY: `http://${NOWHERE}`,
    http_proxy: `http://${NOWHERE}`,
    https_proxy: `http://${NOWHERE}`,
    NO_PROXY: "127.0.0.1,localhost,::1",
    no_proxy: "127.0.0.1,localhost,::1",
  });
  return setUp(daemon.url, { daemon, home });
}

export async function attach(url: string): Promise<Target> {
  return setUp(url.replace(/\/+$/, ""), undefined);
}

export function daemonPid(t: Target): number | undefined {
  return t.own?.daemon.proc.pid;
}

/** Whether the daemon is still there: our own process has not exited; another answers GET /. */
export async function alive(t: Target): Promise<boolean> {
  if (t.own) return t.own.daemon.proc.exitCode === null && t.own.daemon.proc.signalCode === null;
  try {
    const r = await fetch(`${t.url}/`, { signal: AbortSignal.timeout(5000) });
    return r.ok;
  } catch {
    return false;
  }
}

/** How our daemon ended, and its last log lines. */
export function exitInfo(t: Target): string {
  const p = t.own?.daemon.proc;
  if (!p) return "the daemon does not answer GET /";
  // the reason (a V8 fatal error, an uncaught exception) comes before a native stack trace
  const lines = t.own!.daemon.logs().trim().split("\n").slice(-40);
  const reasons = lines.filter((l) => /fatal|error|invalid|abort|uncaught/i.test(l)).slice(0, 3);
  return `exit code ${p.exitCode}, signal ${p.signalCode}; from its log:\n    ${[...reasons, "…", ...lines.slice(-3)].join("\n    ")}`;
}

/** Waits until GET / answers (a stalled daemon may recover); false after `ms`. */
export async function waitHealthy(t: Target, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!(await alive(t))) return false;
    try {
      const r = await fetch(`${t.url}/`, { signal: AbortSignal.timeout(Math.max(100, deadline - Date.now())) });
      if (r.ok) return true;
    } catch {
      // not answering yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

export async function noteRunners(t: Target): Promise<void> {
  const pid = daemonPid(t);
  if (pid) for (const c of await childPids(pid)) t.runners.add(c);
}

/** Ends runner processes our daemon started that outlived it (checked by command line). */
async function endOrphans(t: Target): Promise<void> {
  for (const pid of t.runners) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (cmd.includes("runner-main")) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  t.runners.clear();
}

async function stopOwn(t: Target): Promise<void> {
  if (!t.own) return;
  const { daemon, home } = t.own;
  await noteRunners(t).catch(() => undefined);
  if (daemon.proc.exitCode === null && daemon.proc.signalCode === null) {
    daemon.proc.kill("SIGTERM");
    // a stalled event loop never runs the SIGTERM handler
    const exited = await Promise.race([new Promise((r) => daemon.proc.once("exit", () => r(true))), new Promise((r) => setTimeout(() => r(false), 10_000))]);
    if (!exited) {
      daemon.proc.kill("SIGKILL");
      await new Promise((r) => daemon.proc.once("exit", r));
    }
  }
  await endOrphans(t);
  await daemon.stop();
  await rm(home, { recursive: true, force: true });
}

/** A fresh daemon with a fresh store, after a crash or a stall (our own daemon only). */
export async function restart(t: Target): Promise<Target> {
  if (!t.own) throw new Error(`the daemon at ${t.url} stopped answering; restart it and resume with --from`);
  await stopOwn(t);
  return startOwn();
}

export async function stop(t: Target): Promise<void> {
  if (t.own) return stopOwn(t);
  for (const name of t.created) await fetch(`${t.url}/api/delete`, { method: "DELETE", body: JSON.stringify({ model: name }) }).catch(() => undefined);
}

/** Deletes the models a case made and re-creates a fixture it deleted or replaced. */
export async function resetModels(t: Target): Promise<string[]> {
  const problems: string[] = [];
  const now = await tags(t.url);
  for (const m of now) {
    if (t.expected.get(m.name) === m.digest) continue;
    const r = await fetch(`${t.url}/api/delete`, { method: "DELETE", body: JSON.stringify({ model: m.name }) });
    if (r.status !== 200) problems.push(`deleting ${m.name} after the case: ${r.status} ${(await r.text()).slice(0, 200)}`);
  }
  const after = new Map((await tags(t.url)).map((m) => [m.name, m.digest]));
  const files = await fixtureFiles();
  for (const [name, file] of [[FIXTURE_NAMES.base, files.base], [FIXTURE_NAMES.embed, files.embed]] as const) {
    const digest = t.expected.get(`${name}:latest`);
    if (after.get(`${name}:latest`) !== digest) {
      await createFixture(t.url, name, file);
      const again = (await tags(t.url)).find((m) => m.name === `${name}:latest`)?.digest;
      if (again !== digest) problems.push(`fixture ${name} re-created with digest ${again}, expected ${digest}`);
    }
  }
  return problems;
}

/** Unloads every loaded model, so the next case starts without a runner loaded with odd options. */
export async function unloadAll(t: Target): Promise<void> {
  const r = await fetch(`${t.url}/api/ps`);
  if (!r.ok) return;
  const { models } = (await r.json()) as { models: Array<{ name: string }> };
  for (const m of models) {
    await fetch(`${t.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: m.name, keep_alive: 0 }) }).then((x) => x.arrayBuffer()).catch(() => undefined);
  }
}

/**
 * Store files our daemon holds beyond those right after setup: blobs the case uploaded are
 * removed quietly (they are legitimately kept, but would fill the disk over 10,000 cases);
 * anything else (a partial download, a temporary file) is a leftover, reported and removed.
 */
export async function storeLeftovers(t: Target, uploaded: ReadonlySet<string>): Promise<string[]> {
  if (!t.own) return [];
  const dir = path.join(t.own.daemon.models, "blobs");
  const leftovers: string[] = [];
  for (const f of await readdir(dir).catch(() => [] as string[])) {
    if (t.blobs.has(f)) continue;
    if (!uploaded.has(f.replace(/^sha256-/, "sha256:"))) leftovers.push(f);
    await rm(path.join(dir, f), { recursive: true, force: true });
  }
  return leftovers;
}
