// The built CLI without a daemon: usage errors on one line with exit code 1, `-v` without a
// server, "could not connect" with how to start the daemon (serve, or the installed service),
// and help text.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import module from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseQuantizeType } from "../../src/registry/quantize.js";
import { serviceStartHint } from "../../src/service/manage.js";
import { CLI } from "../helpers/daemon.js";
import { need } from "../helpers/need.js";

let home: string;
beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "ollamats-cli-home-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, HOME: home, XDG_CONFIG_HOME: "", OLLAMA_HOST: "127.0.0.1:1", ...env }, timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

describe("usage errors: one line, exit code 1", () => {
  const cases: [string[], string][] = [
    [["frobnicate"], 'Error: unknown command "frobnicate" for "ollamats"'],
    [["lsit"], 'Error: unknown command "lsit" for "ollamats"\n\nDid you mean this?\n\tlist\n'],
    [["rnu", "m"], 'Error: unknown command "rnu" for "ollamats"\n\nDid you mean this?\n\trun\n\trm\n'],
    [["service", "unistall"], 'Error: unknown command "unistall" for "ollamats service"\n\nDid you mean this?\n\tinstall\n\tuninstall\n'],
    [["run", "m", "--nowordrap"], "Error: unknown flag: --nowordrap\n\nDid you mean this?\n\t--nowordwrap\n"],
    [["run", "m", "--format"], "Error: flag needs an argument: --format"],
    [["run", "m", "--bogus"], "Error: unknown flag: --bogus"],
    [["list", "-z"], "Error: unknown shorthand flag: 'z' in -z"],
    [["run"], "Error: requires at least 1 arg(s), only received 0"],
    [["cp", "a"], "Error: requires at least 2 arg(s), only received 1"],
    [["show", "a", "b"], 'Error: unexpected argument "b" for "ollamats show"'],
    [["run", "bad name", "hi"], 'Error: invalid model name: "bad name"'],
    [["show", "bad name"], 'Error: invalid model name: "bad name"'],
    [["stop", "bad name"], 'Error: invalid model name: "bad name"'],
    [["run", "m", "--think=loud", "hi"], 'Error: invalid value for --think: "loud" (must be true, false, high, medium, low, or max)'],
    [["run", "m", "--keepalive", "soon", "hi"], 'Error: time: invalid duration "soon"'],
    [["run", "m", "--dimensions", "x", "hi"], 'Error: invalid argument "x" for "--dimensions" flag: strconv.ParseInt: parsing "x": invalid syntax'],
    [["show", "m", "--license", "--system"], "Error: only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified"],
  ];
  for (const [args, message] of cases) {
    it(args.join(" "), async () => {
      const r = await cli(args);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`${message}\n`);
      expect(r.stdout).toBe("");
    });
  }
});

describe("without a daemon", () => {
  it("-v prints the client version with a warning", async () => {
    for (const flag of ["-v", "--version"]) {
      const r = await cli([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Warning: could not connect to a running ollamats instance\nWarning: client version is \d+\.\d+\.\d+\S*\n$/);
    }
  });

  it("says to run serve when no service is installed", async () => {
    const r = await cli(["list"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("Error: could not connect to ollamats server, run 'ollamats serve' to start it\n");
  });

  it.skipIf(process.platform !== "linux")("names the service's start command when one is installed", async () => {
    const unitDir = path.join(home, ".config/systemd/user");
    await mkdir(unitDir, { recursive: true });
    await writeFile(path.join(unitDir, "ollamats.service"), "# Managed by ollamats\n");
    try {
      const r = await cli(["ps"]);
      expect(r.code).toBe(1);
      // a system-wide unit on this machine would take precedence
      expect(r.stderr).toMatch(
        /^Error: could not connect to ollamats server, start the service with '(systemctl --user start ollamats|sudo systemctl start ollamats)' \(or run 'ollamats serve'\)\n$/,
      );
    } finally {
      await rm(path.join(home, ".config"), { recursive: true, force: true });
    }
  });

  it("picks the start command from the files present", () => {
    const hint = (files: string[], platform = "linux") => serviceStartHint(platform, "/home/a", {}, (p) => files.includes(p));
    expect(hint([])).toBeUndefined();
    expect(hint(["/etc/systemd/system/ollamats.service"])).toBe("sudo systemctl start ollamats");
    expect(hint(["/usr/lib/systemd/system/ollamats.service"])).toBe("sudo systemctl start ollamats");
    expect(hint(["/home/a/.config/systemd/user/ollamats.service"])).toBe("systemctl --user start ollamats");
    expect(hint(["/home/a/Library/LaunchAgents/com.ollamats.server.plist"], "darwin")).toBe("launchctl kickstart gui/$(id -u)/com.ollamats.server");
    expect(hint(["/Library/LaunchDaemons/com.ollamats.server.plist"], "darwin")).toBe("sudo launchctl kickstart system/com.ollamats.server");
    expect(hint(["/etc/systemd/system/ollamats.service"], "win32")).toBeUndefined();
  });
});

describe("Node's compile cache (Node 22 and newer)", () => {
  it("is kept in the user's own cache directory, private, never under the shared tmp; Node 20 has none", async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), "ollamats-xdg-cache-"));
    const tmp = await mkdtemp(path.join(os.tmpdir(), "ollamats-tmpdir-"));
    const r = await cli(["-v"], { XDG_CACHE_HOME: cache, TMPDIR: tmp });
    expect(r.stdout).toContain("Warning: client version is");
    const dir = path.join(cache, "ollamats", "node-compile-cache");
    if (typeof (module as { enableCompileCache?: unknown }).enableCompileCache === "function") {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      const [version, ...others] = readdirSync(dir);
      expect(others).toEqual([]);
      expect(readdirSync(path.join(dir, version!)).length).toBeGreaterThan(0); // compiled modules
    } else {
      expect(existsSync(dir)).toBe(false);
    }
    expect(readdirSync(tmp)).toEqual([]);
    await rm(cache, { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
  });
});

describe("serve checks the models directory at start", () => {
  const stops = (models: string) => cli(["serve"], { OLLAMA_MODELS: models, OLLAMA_HOST: "127.0.0.1:0" });
  const tail = "; set OLLAMA_MODELS to a directory ollamats can create and write\n";

  it("refuses a file, a path under a file, and /proc, before listening", async () => {
    const file = path.join(home, "a-file");
    await writeFile(file, "");
    for (const [models, reason, at] of [
      [file, "a part of the path is a file, not a directory", path.join(file, "blobs")],
      [path.join(file, "sub"), "a part of the path is a file, not a directory", path.join(file, "sub", "blobs")],
      ["/proc/ollamats-models", "the directory cannot be created there", "/proc/ollamats-models/blobs"],
    ] as const) {
      const r = await stops(models);
      expect(r.code, models).toBe(1);
      expect(r.stderr).toBe(`Error: the models directory ${models} (OLLAMA_MODELS) cannot be used: ${reason} (${at})${tail}`);
      expect(r.stdout).not.toContain("Listening");
    }
  });

  it("refuses a directory it may not write", async () => {
    need(process.getuid?.() === 0 && spawnSync("sh", ["-c", "command -v runuser"]).status === 0, "root and runuser (to start serve as nobody)");
    const models = path.join(home, "root-only");
    await mkdir(path.join(models, "blobs"), { recursive: true, mode: 0o755 });
    await mkdir(path.join(models, "manifests"), { recursive: true, mode: 0o755 });
    const r = spawnSync("runuser", ["-u", "nobody", "--", process.execPath, CLI, "serve"], {
      encoding: "utf8",
      cwd: "/",
      timeout: 20_000,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", OLLAMA_HOST: "127.0.0.1:0", OLLAMA_MODELS: models },
    });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^Error: the models directory ${models} \\(OLLAMA_MODELS\\) cannot be used: permission denied \\(${models}/blobs[/)]`));
  });
});

describe("help", () => {
  it("lists every command, with service", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["serve", "create", "show", "run", "stop", "pull", "list", "ps", "cp", "rm", "service"]) {
      expect(r.stdout).toMatch(new RegExp(`^  ollamats ${c}\\b`, "m"));
    }
    expect((await cli([])).stdout).toBe(r.stdout);
  });

  it("`help run` shows run's flags and environment variables, one per line", async () => {
    const r = await cli(["help", "run"]);
    expect(r.code).toBe(0);
    for (const flag of ["--keepalive", "--verbose", "--insecure", "--nowordwrap", "--format", "--think", "--hidethinking", "--truncate", "--dimensions"]) {
      expect(r.stdout).toContain(flag);
    }
    expect(r.stdout).toMatch(/^ {6}OLLAMA_HOST {19}IP Address for the ollama server \(default 127\.0\.0\.1:11434\)$/m);
    expect(r.stdout).toMatch(/^ {6}OLLAMA_NOHISTORY {14}Do not preserve readline history$/m);
  });

  it("`create --help` suggests only quantization levels the daemon accepts", async () => {
    const r = await cli(["create", "--help"]);
    const line = r.stdout.split("\n").find((l) => l.includes("--quantize")) ?? "";
    const levels = line.match(/\b[qQfF]\d+(_[0-9A-Za-z]+)*\b/g) ?? [];
    expect(levels.length, line).toBeGreaterThan(0);
    for (const level of levels) expect(() => parseQuantizeType(level), level).not.toThrow();
  });
});
