// The CLI against the real daemon: create from a Modelfile (blob upload first), run one-shot and
// from piped stdin, list, show, ps, stop, and the error paths.
import { execFile, spawnSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { CLI, createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

const exec = promisify(execFile);
let d: TestDaemon;
let dir: string;
let gguf: string;

async function cli(args: string[], input?: string): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: d.env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
    if (input !== undefined) child.stdin?.end(input);
    else child.stdin?.end();
  });
}

beforeAll(async () => {
  gguf = await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 });
  d = await startDaemon();
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-cli-"));
  await writeFile(
    path.join(dir, "Modelfile"),
    [`FROM ${gguf}`, "SYSTEM You are a test.", "PARAMETER seed 11", "PARAMETER num_predict 8", 'PARAMETER stop "<|im_end|>"', "LICENSE MIT"].join("\n"),
  );
}, 60_000);

afterAll(async () => {
  await d?.stop();
});

describe("ollamats CLI", () => {
  it("create uploads the GGUF and builds the model", async () => {
    const r = await cli(["create", "cli-model", "-f", path.join(dir, "Modelfile")]);
    expect(r.code).toBe(0);
    expect(r.stderr + r.stdout).toMatch(/success/);
    const list = await cli(["list"]);
    expect(list.stdout).toMatch(/^NAME\s+ID\s+SIZE\s+MODIFIED/);
    expect(list.stdout).toMatch(/cli-model:latest\s+[0-9a-f]{12}\s+\d+(\.\d)? KB\s+(Less than a second|\d+ seconds?) ago/);
  });

  it("creating the same model again uses the existing layers, and says so", async () => {
    const r = await cli(["create", "cli-model", "-f", path.join(dir, "Modelfile")]);
    expect(r.code).toBe(0);
    const out = r.stderr + r.stdout;
    // the weights, the system prompt, the parameters and the license: all in the store already
    expect(out.match(/^using existing layer sha256:[0-9a-f]{64}$/gm)?.length, out).toBe(4);
    expect(out).not.toMatch(/creating new layer/);
    // a changed Modelfile makes exactly the changed layer new
    await writeFile(path.join(dir, "Modelfile.2"), (await readFile(path.join(dir, "Modelfile"), "utf8")).replace("You are a test.", "You are another test."));
    const changed = await cli(["create", "cli-model-2", "-f", path.join(dir, "Modelfile.2")]);
    expect((changed.stderr + changed.stdout).match(/^creating new layer sha256:[0-9a-f]{64}$/gm)?.length).toBe(1);
  });

  it("run answers a one-shot prompt, and the same prompt piped on stdin, identically", async () => {
    const a = await cli(["run", "cli-model", "Hello", "there"]);
    expect(a.code).toBe(0);
    expect(a.stdout.trim().length).toBeGreaterThan(0);
    const b = await cli(["run", "cli-model"], "Hello there");
    expect(b.code).toBe(0);
    expect(b.stdout).toBe(a.stdout);
  });

  it("show prints the model's sections and single fields", async () => {
    const s = await cli(["show", "cli-model"]);
    expect(s.stdout).toMatch(/Model\n\s+architecture\s+llama/);
    expect(s.stdout).toMatch(/quantization\s+Q8_0/);
    const sys = await cli(["show", "cli-model", "--system"]);
    expect(sys.stdout.trim()).toBe("You are a test.");
    const params = await cli(["show", "cli-model", "--parameters"]);
    expect(params.stdout).toMatch(/num_predict\s+8/);
    expect(params.stdout).toMatch(/stop\s+"<\|im_end\|>"/);
  });

  it("ps lists the loaded model and stop unloads it", async () => {
    const ps = await cli(["ps"]);
    expect(ps.stdout).toMatch(/^NAME\s+ID\s+SIZE\s+PROCESSOR\s+CONTEXT\s+UNTIL/);
    expect(ps.stdout).toMatch(/cli-model:latest\s+[0-9a-f]{12}\s+.*100% CPU\s+4096\s+\d+ minutes from now/);
    expect((await cli(["stop", "cli-model"])).code).toBe(0);
    expect((await cli(["ps"])).stdout).not.toMatch(/cli-model/);
  });

  it("bad input: unknown command, missing model, bad name, missing Modelfile", async () => {
    const unknown = await cli(["frobnicate"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split("\n")[0]).toMatch(/unknown command/i);
    const missing = await cli(["show", "nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe("Error: model 'nope:latest' not found");
    const badName = await cli(["show", "bad name"]);
    expect(badName.code).toBe(1);
    expect(badName.stderr).toMatch(/invalid model name/);
    const noFile = await cli(["create", "x", "-f", path.join(dir, "missing")]);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("a reader that goes away ends the command quietly: no EPIPE, no stack trace, exit code 0", async () => {
    expect((await createModelFromFile(d.url, "long-answer", gguf, { parameters: { seed: 3, num_predict: 2000 } })).status).toBe(200);
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const node = `${q(process.execPath)} ${q(CLI)}`;
    // the reader is gone before the first write (the sleep), or after 20 bytes of a long answer
    const pipelines = [`(sleep 0.3; exec ${node} list) | head -n 0`, `${node} run long-answer "Tell me a long story" </dev/null | head -c 20 >/dev/null`];
    for (const line of pipelines) {
      const r = await exec("bash", ["-c", `${line}; echo "status=\${PIPESTATUS[0]}" >&2`], { env: d.env, timeout: 60_000 });
      expect(r.stderr, line).toBe("status=0\n");
    }
  });

  it("says how to start the daemon when it is not running", async () => {
    // run sends no heartbeat: its first request, /api/show, must fail with the same sentence
    for (const args of [["list"], ["run", "any-model", "hi"]]) {
      // stdin closed: run reads a piped prompt to its end before it sends anything
      const r = spawnSync(process.execPath, [CLI, ...args], { env: { ...d.env, OLLAMA_HOST: "127.0.0.1:1" }, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", timeout: 20_000 });
      expect(r.status, args.join(" ")).toBe(1);
      expect(r.stderr.trim(), args.join(" ")).toBe("Error: could not connect to ollamats server, run 'ollamats serve' to start it");
    }
  });
});
