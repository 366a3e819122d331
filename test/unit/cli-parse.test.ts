// Client-side parsing: Modelfile → /api/create request, the REPL's input handling, run's flags and
// the argument rewrites that make yargs read a command line as cobra does.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizeArgs, usageError } from "../../src/cli/args.js";
import { fastRoute } from "../../src/cli/fast-path.js";
import { editDistance, suggestionsFor } from "../../src/cli/suggest.js";
import { inferThink, parseFormatFlag, parseKeepAliveFlag, parseThinkFlag } from "../../src/cli/commands/run.js";
import { buildCreatePlan, expandPath, requestFileNames } from "../../src/cli/modelfile-request.js";
import { ReplInput, saveRequest, showCommandOutput, type SessionState } from "../../src/cli/repl-input.js";
import { parseModelfile, parseParameterValue } from "../../src/registry/modelfile.js";
import type { ShowResponse } from "../../src/api/types.js";
import { showField } from "../../src/cli/show-info.js";

let dir: string;
const sha = (data: string) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "ollamats-cli-"));
  writeFileSync(path.join(dir, "weights.gguf"), "GGUF fake weights");
  writeFileSync(path.join(dir, "lora.gguf"), "GGUF fake adapter");
  mkdirSync(path.join(dir, "sub"));
  writeFileSync(path.join(dir, "sub", "model.gguf"), "GGUF in a directory");
  writeFileSync(path.join(dir, "sub", "config.json"), "{}");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const plan = async (text: string) => buildCreatePlan(parseModelfile(text, { onWarning: () => {} }), dir, parseParameterValue);

describe("Modelfile → create request", () => {
  it("maps FROM a local file to files, digests computed from the content", async () => {
    const p = await plan("FROM ./weights.gguf\n");
    expect(p.request).toEqual({ files: { "weights.gguf": sha("GGUF fake weights") } });
    expect(p.files).toEqual([{ path: path.join(dir, "weights.gguf"), digest: sha("GGUF fake weights"), name: "weights.gguf" }]);
    expect(p.request.from).toBeUndefined();
  });

  it("maps FROM a model name (or a path that does not exist) to from", async () => {
    expect((await plan("FROM llama3.2\n")).request).toEqual({ from: "llama3.2" });
    expect((await plan("FROM ./missing.gguf\n")).request).toEqual({ from: "./missing.gguf" });
    expect((await plan("FROM llama3.2\n")).files).toEqual([]);
  });

  it("maps FROM a directory to its model files, named relative to it", async () => {
    const p = await plan("FROM sub\n");
    expect(p.request.files).toEqual({ "model.gguf": sha("GGUF in a directory"), "config.json": sha("{}") });
  });

  it("types parameters, repeats stop, collects licenses and messages", async () => {
    const p = await plan(
      [
        "FROM llama3.2",
        "PARAMETER temperature 0.7",
        "PARAMETER num_ctx 4096",
        'PARAMETER stop "<|start_header_id|>"',
        "PARAMETER stop <|eot_id|>",
        'PARAMETER stop " end "',
        "PARAMETER use_mmap false",
        'TEMPLATE """{{ .System }} {{ .Prompt }}"""',
        'SYSTEM """You are\nMario."""',
        "LICENSE MIT",
        'LICENSE """Apache\n2.0"""',
        "MESSAGE user Is Toronto in Canada?",
        "MESSAGE assistant yes",
        "ADAPTER ./lora.gguf",
        "REQUIRES 0.14.0",
        "",
      ].join("\n"),
    );
    expect(p.request).toEqual({
      from: "llama3.2",
      parameters: { temperature: 0.7, num_ctx: 4096, stop: ["<|start_header_id|>", "<|eot_id|>", " end "], use_mmap: false },
      template: "{{ .System }} {{ .Prompt }}",
      system: "You are\nMario.",
      license: ["MIT", "Apache\n2.0"],
      messages: [
        { role: "user", content: "Is Toronto in Canada?" },
        { role: "assistant", content: "yes" },
      ],
      adapters: { "lora.gguf": sha("GGUF fake adapter") },
      requires: "0.14.0",
    });
  });

  it("rejects a bad parameter with the line number, and a missing ADAPTER file", async () => {
    await expect(plan("FROM x\nPARAMETER num_ctx lots\n")).rejects.toThrow("(line 2): invalid int value [lots]");
    await expect(plan("FROM x\nPARAMETER nope 1\n")).rejects.toThrow("unknown parameter 'nope'");
    await expect(plan("FROM x\nADAPTER ./none.gguf\n")).rejects.toThrow("no such file");
  });

  it("accepts commands named by parameter key (Ollama's parser shape)", async () => {
    const p = await buildCreatePlan(
      [
        { name: "model", args: "llama3.2" },
        { name: "stop", args: "a" },
        { name: "stop", args: "b" },
        { name: "top_k", args: "20" },
        { name: "mirostat", args: "1" },
        { name: "message", args: "user: hi" },
      ],
      dir,
      parseParameterValue,
    );
    expect(p.request.parameters).toEqual({ stop: ["a", "b"], top_k: 20 });
    expect(p.request.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(p.warnings).toEqual(["warning: parameter mirostat is deprecated"]);
  });

  it("expands ~ and resolves relative paths against the Modelfile's directory", () => {
    expect(expandPath("~/models/a.gguf", "/work", "/home/u")).toBe("/home/u/models/a.gguf");
    expect(expandPath("~", "/work", "/home/u")).toBe("/home/u");
    expect(expandPath("./a.gguf", "/work/m")).toBe("/work/m/a.gguf");
    expect(expandPath("a.gguf", "/work/m")).toBe("/work/m/a.gguf");
    expect(expandPath("/abs/a.gguf", "/work/m")).toBe("/abs/a.gguf");
  });

  it("names several files relative to their common directory", () => {
    const names = requestFileNames(["/m/model-1.safetensors", "/m/sub/config.json", "/m/tokenizer.json"]);
    expect([...names.values()]).toEqual(["model-1.safetensors", "sub/config.json", "tokenizer.json"]);
    expect([...requestFileNames(["/x/y/only.gguf"]).values()]).toEqual(["only.gguf"]);
  });
});

function session(): SessionState {
  return {
    model: "llama3.2",
    parentModel: "",
    loadedMessages: [],
    messages: [],
    system: "",
    options: {},
    wordWrap: true,
    verbose: false,
    format: "",
    think: undefined,
    thinkExplicit: false,
  };
}

describe("REPL input", () => {
  it("sends a plain line as a user message", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    const r = repl.handleLine("why is the sky blue?");
    expect(r.effect).toEqual({ type: "chat" });
    expect(repl.state.messages).toEqual([{ role: "user", content: "why is the sky blue?" }]);
  });

  it('collects a """ block across lines', () => {
    const repl = new ReplInput(session(), parseParameterValue);
    let r = repl.handleLine('"""first line');
    expect(r).toMatchObject({ continuation: true });
    expect(r.effect).toBeUndefined();
    r = repl.handleLine("");
    expect(r.continuation).toBe(true);
    r = repl.handleLine("second line");
    expect(r.continuation).toBe(true);
    r = repl.handleLine('last"""');
    expect(r.effect).toEqual({ type: "chat" });
    expect(r.continuation).toBe(false);
    expect(repl.state.messages).toEqual([{ role: "user", content: "first line\n\nsecond line\nlast" }]);
  });

  it('takes """text""" on one line as one message; a lone """ closes a block', () => {
    const repl = new ReplInput(session(), parseParameterValue);
    expect(repl.handleLine('"""one liner"""').effect).toEqual({ type: "chat" });
    repl.handleLine('"""');
    repl.handleLine("body");
    expect(repl.handleLine('"""').effect).toEqual({ type: "chat" });
    expect(repl.state.messages.map((m) => m.content)).toEqual(["one liner", "\nbody\n"]);
  });

  it("types /set parameter values and reports them as Ollama does", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    expect(repl.handleLine("/set parameter temperature 0.5").stdout).toBe("Set parameter 'temperature' to '0.5'\n");
    expect(repl.handleLine("/set parameter num_ctx 8192").stdout).toBe("Set parameter 'num_ctx' to '8192'\n");
    expect(repl.handleLine("/set parameter stop <|a|> <|b|>").stdout).toBe("Set parameter 'stop' to '<|a|>, <|b|>'\n");
    expect(repl.state.options).toEqual({ temperature: 0.5, num_ctx: 8192, stop: ["<|a|>", "<|b|>"] });
    expect(repl.handleLine("/set parameter num_ctx big").stdout).toBe('Couldn\'t set parameter: "invalid int value [big]"\n');
    expect(repl.handleLine("/set parameter foo 1").stdout).toBe('Couldn\'t set parameter: "unknown parameter \'foo\'"\n');
    expect(repl.handleLine("/set parameter seed").stderr).toContain("Available Parameters:");
    expect(repl.state.options).toEqual({ temperature: 0.5, num_ctx: 8192, stop: ["<|a|>", "<|b|>"] });
  });

  it("sets the system message, replacing a trailing one, and keeps it on /clear", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    expect(repl.handleLine("/set system You are Mario.").stdout).toBe("Set system message.\n");
    repl.handleLine("/set system   Be   brief.");
    expect(repl.state.messages).toEqual([{ role: "system", content: "Be brief." }]);
    repl.handleLine("hi");
    repl.addAssistant({ role: "assistant", content: "hello" });
    expect(repl.handleLine("/clear").stdout).toBe("Cleared session context\n");
    expect(repl.state.messages).toEqual([{ role: "system", content: "Be brief." }]);
  });

  it('reads a multi-line /set system """ block', () => {
    const repl = new ReplInput(session(), parseParameterValue);
    expect(repl.handleLine('/set system """You are').continuation).toBe(true);
    const r = repl.handleLine('a pirate."""');
    expect(r.stdout).toBe("Set system message.\n");
    expect(r.effect).toBeUndefined();
    expect(repl.state.system).toBe("You are\na pirate.");
    expect(repl.state.messages).toEqual([{ role: "system", content: "You are\na pirate." }]);
  });

  it("handles session flags, help, exit and unknown commands", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    expect(repl.handleLine("/set verbose").stdout).toBe("Set 'verbose' mode.\n");
    expect(repl.state.verbose).toBe(true);
    expect(repl.handleLine("/set nowordwrap").stdout).toBe("Set 'nowordwrap' mode.\n");
    expect(repl.state.wordWrap).toBe(false);
    expect(repl.handleLine("/set format json").stdout).toBe("Set format to 'json' mode.\n");
    expect(repl.state.format).toBe("json");
    expect(repl.handleLine("/set format xml").stdout).toBe("Invalid or missing format. For 'json' mode use '/set format json'\n");
    expect(repl.handleLine("/set noformat").stdout).toBe("Disabled format.\n");
    expect(repl.handleLine("/set think high")).toMatchObject({ stdout: "Set 'think' mode to 'high'.\n", effect: { type: "check-think" } });
    expect(repl.state).toMatchObject({ think: "high", thinkExplicit: true });
    expect(repl.handleLine("/set nothink").stdout).toBe("Set 'nothink' mode.\n");
    expect(repl.state.think).toBe(false);
    expect(repl.handleLine("/set nohistory").effect).toEqual({ type: "history", enabled: false });
    expect(repl.handleLine("/set bogus").stdout).toBe("Unknown command '/set bogus'. Type /? for help\n");
    expect(repl.handleLine("/set").stderr).toContain("/set parameter ...");
    expect(repl.handleLine("/?").stderr).toContain('Use """ to begin a multi-line message.');
    expect(repl.handleLine("/help shortcuts").stderr).toContain("Ctrl + d");
    expect(repl.handleLine("/show").stderr).toContain("/show modelfile");
    expect(repl.handleLine("/show info").effect).toEqual({ type: "show", what: "info" });
    expect(repl.handleLine("/load").stdout).toBe("Usage:\n  /load <modelname>\n");
    expect(repl.handleLine("/load qwen3").effect).toEqual({ type: "load", model: "qwen3" });
    expect(repl.handleLine("/save mine").effect).toEqual({ type: "save", name: "mine" });
    expect(repl.handleLine("/list").effect).toEqual({ type: "list", prefix: undefined });
    expect(repl.handleLine("/foo bar").stdout).toBe("Unknown command '/foo'. Type /? for help\n");
    expect(repl.handleLine("/bye").effect).toEqual({ type: "exit" });
    expect(repl.handleLine("/exit").effect).toEqual({ type: "exit" });
    expect(repl.state.messages).toEqual([]);
  });

  it("keeps bracketed-paste lines for one message, sent by the Enter after the paste", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    for (const line of ["def f():", "    return 1", "/not a command"]) {
      const r = repl.handleLine(line, true);
      expect(r).toMatchObject({ continuation: true, stdout: "", stderr: "" });
      expect(r.effect).toBeUndefined();
    }
    const r = repl.handleLine("explain this");
    expect(r.effect).toEqual({ type: "chat" });
    expect(repl.state.messages).toEqual([{ role: "user", content: "def f():\n    return 1\n/not a command\nexplain this" }]);
  });

  it("drops a half-typed block on Ctrl+C", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    repl.handleLine('"""abc');
    expect(repl.interrupt().stdout).toBe("\nUse Ctrl + d or /bye to exit.\n");
    expect(repl.handleLine("fresh").effect).toEqual({ type: "chat" });
    expect(repl.state.messages).toEqual([{ role: "user", content: "fresh" }]);
  });

  it("builds the /save request from the session", () => {
    const s = session();
    s.parentModel = "llama3.2:latest";
    s.loadedMessages = [{ role: "user", content: "hi" }];
    s.system = "Be brief.";
    s.options = { temperature: 0.2 };
    s.messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "yo" }];
    expect(saveRequest(s, "mine")).toEqual({
      model: "mine",
      from: "llama3.2:latest",
      system: "Be brief.",
      parameters: { temperature: 0.2 },
      messages: [{ role: "user", content: "hi" }, { role: "system", content: "Be brief." }, { role: "user", content: "yo" }],
    });
    expect(saveRequest(session(), "x")).toEqual({ model: "x", from: "llama3.2" });
  });

  it("prints /show parameters with the user's own", () => {
    const s = session();
    s.options = { temperature: 0.5, num_ctx: 8192, stop: ["a", "b"] };
    const resp = { parameters: 'stop                           "<|eot_id|>"' } as ShowResponse;
    expect(showCommandOutput("parameters", resp, s).stdout).toBe(
      "Model defined parameters:\n" +
        '  stop                           "<|eot_id|>"\n' +
        "\n" +
        "User defined parameters:\n" +
        "  temperature                    0.5\n" +
        "  num_ctx                        8192\n" +
        "  stop                           [a b]\n" +
        "\n",
    );
    expect(showCommandOutput("license", {} as ShowResponse, s).stdout).toBe("No license was specified for this model.\n");
    expect(showCommandOutput("system", { system: "Hi" } as ShowResponse, s).stdout).toBe("Hi\n\n");
  });

  it("prints every /show subcommand as interactive.go does", () => {
    const s = session();
    const resp = { license: "MIT", modelfile: "FROM x", parameters: "", system: "Model system", template: "{{ .Prompt }}" } as unknown as ShowResponse;
    expect(showCommandOutput("license", resp, s)).toEqual({ stdout: "MIT\n", stderr: "" });
    expect(showCommandOutput("modelfile", resp, s)).toEqual({ stdout: "FROM x\n", stderr: "" });
    expect(showCommandOutput("template", resp, s)).toEqual({ stdout: "{{ .Prompt }}\n", stderr: "" });
    expect(showCommandOutput("template", { template: "" } as ShowResponse, s).stdout).toBe("No prompt template was specified for this model.\n");
    expect(showCommandOutput("parameters", resp, s).stdout).toBe("Model defined parameters:\n  No additional parameters were specified for this model.\n\n");
    expect(showCommandOutput("system", resp, s).stdout).toBe("Model system\n\n");
    expect(showCommandOutput("system", {} as ShowResponse, s).stdout).toBe("No system message was specified for this model.\n");
    s.system = "Session system"; // /set system wins over the model's
    expect(showCommandOutput("system", resp, s).stdout).toBe("Session system\n\n");
    expect(showCommandOutput("nonsense", resp, s).stdout).toBe("Unknown command '/show nonsense'. Type /? for help\n");
    // /show info goes to stderr, as showInfo(resp, false, os.Stderr)
    const info = showCommandOutput("info", { details: { family: "llama", parameter_size: "1B", quantization_level: "Q4_0" } } as ShowResponse, s);
    expect(info.stdout).toBe("");
    expect(info.stderr).toMatch(/^ {2}Model\n {4}architecture {4}llama {4}\n/);
  });

  it("prints the help texts of interactive.go", () => {
    const repl = new ReplInput(session(), parseParameterValue);
    expect(repl.handleLine("/?").stderr).toBe(
      "Available Commands:\n" +
        "  /set            Set session variables\n" +
        "  /show           Show model information\n" +
        "  /load <model>   Load a session or model\n" +
        "  /save <model>   Save your current session\n" +
        "  /clear          Clear session context\n" +
        "  /bye            Exit\n" +
        "  /?, /help       Help for a command\n" +
        "  /? shortcuts    Help for keyboard shortcuts\n" +
        "\n" +
        'Use """ to begin a multi-line message.\n' +
        "\n",
    );
    expect(repl.handleLine("/set").stderr).toMatch(/^Available Commands:\n  \/set parameter \.\.\.     Set a parameter\n/);
    expect(repl.handleLine("/show").stderr).toMatch(/^Available Commands:\n  \/show info         Show details for this model\n/);
    expect(repl.handleLine("/set parameter").stderr).toMatch(/^Available Parameters:\n  \/set parameter seed <int>             Random number seed\n/);
    expect(repl.handleLine("/? shortcuts").stderr).toContain("  Ctrl + g            Open default editor to compose a prompt\n");
    expect(repl.handleLine("/load").stdout).toBe("Usage:\n  /load <modelname>\n");
    expect(repl.handleLine("/save a b").stdout).toBe("Usage:\n  /save <modelname>\n");
    expect(repl.handleLine("/set format yaml").stdout).toBe("Invalid or missing format. For 'json' mode use '/set format json'\n");
    expect(repl.handleLine("/set parameter temperature hot").stdout).toMatch(/^Couldn't set parameter: ".*"\n$/);
  });
});

describe("ollama show single fields (ShowHandler)", () => {
  it("prints license, modelfile and parameters with a newline; system and template as they are", () => {
    const resp = { license: "MIT", modelfile: "FROM x", parameters: "seed 1", system: "sys", template: "tpl" } as unknown as ShowResponse;
    expect(showField("license", resp)).toBe("MIT\n");
    expect(showField("modelfile", resp)).toBe("FROM x\n");
    expect(showField("parameters", resp)).toBe("seed 1\n");
    expect(showField("system", resp)).toBe("sys");
    expect(showField("template", resp)).toBe("tpl");
    expect(showField("license", {} as ShowResponse)).toBe("\n");
  });
});

describe("run flags", () => {
  it("--think", () => {
    expect(parseThinkFlag(undefined)).toBeUndefined();
    expect(parseThinkFlag("true")).toBe(true);
    expect(parseThinkFlag("")).toBe(true);
    expect(parseThinkFlag("false")).toBe(false);
    expect(parseThinkFlag("high")).toBe("high");
    expect(() => parseThinkFlag("loud")).toThrow('invalid value for --think: "loud" (must be true, false, high, medium, low, or max)');
  });

  it("--keepalive is sent as Ollama's client sends a Duration", () => {
    expect(parseKeepAliveFlag("5m")).toBe("5m0s");
    expect(parseKeepAliveFlag("1h30m")).toBe("1h30m0s");
    expect(parseKeepAliveFlag("0")).toBe("0s");
    expect(parseKeepAliveFlag("-1m")).toBe(-1);
    expect(parseKeepAliveFlag(undefined)).toBeUndefined();
    expect(() => parseKeepAliveFlag("300")).toThrow('time: missing unit in duration "300"');
  });

  it("--format", () => {
    expect(parseFormatFlag("json")).toBe("json");
    expect(parseFormatFlag('{"type":"object"}')).toEqual({ type: "object" });
    expect(parseFormatFlag("")).toBeUndefined();
    expect(() => parseFormatFlag("yaml")).toThrow("invalid format");
  });

  it("thinking defaults on for thinking models unless set", () => {
    expect(inferThink(["completion", "thinking"], undefined, false)).toBe(true);
    expect(inferThink(["completion"], undefined, false)).toBeUndefined();
    expect(inferThink(["completion", "thinking"], false, true)).toBe(false);
  });
});

describe("command line", () => {
  it("rewrites help and a bare --think", () => {
    expect(normalizeArgs(["help"])).toEqual(["--help"]);
    expect(normalizeArgs(["help", "run"])).toEqual(["run", "--help"]);
    expect(normalizeArgs(["run", "m", "--think", "hi"])).toEqual(["run", "m", "--think=true", "hi"]);
    expect(normalizeArgs(["run", "m", "--", "--think"])).toEqual(["run", "m", "--", "--think"]);
  });

  it("words usage errors as cobra does, on one line", () => {
    expect(usageError("Unknown argument: foo", undefined)).toBe('unknown command "foo" for "ollamats"');
    expect(usageError("Unknown argument: foo", "list", ["list", "--foo"])).toBe("unknown flag: --foo");
    expect(usageError("Unknown argument: x", undefined, ["-x"])).toBe("unknown shorthand flag: 'x' in -x");
    expect(usageError("Unknown arguments: a, b", "cp", ["cp", "s", "d", "a", "b"])).toBe('unexpected argument "a" for "ollamats cp"');
    expect(usageError("Not enough non-option arguments: got 0, need at least 1", "show")).toBe("requires at least 1 arg(s), only received 0");
  });

  it("flag values that are missing, in cobra's words", () => {
    expect(usageError("Not enough arguments following: format", "run")).toBe("flag needs an argument: --format");
    expect(usageError("Not enough arguments following: f", "create")).toBe("flag needs an argument: 'f' in -f");
  });

  it("suggests what a mistyped command or flag probably meant (cobra: distance <= 2, or a prefix)", () => {
    const commands = ["serve", "create", "show", "run", "stop", "pull", "push", "list", "ps", "cp", "rm", "service", "help"];
    expect(usageError("Unknown argument: lsit", undefined, ["lsit"], { commands })).toBe('unknown command "lsit" for "ollamats"\n\nDid you mean this?\n\tlist\n');
    expect(usageError("Unknown argument: serv", undefined, ["serv"], { commands })).toBe('unknown command "serv" for "ollamats"\n\nDid you mean this?\n\tserve\n\tservice\n');
    expect(usageError("Unknown argument: PULLL", undefined, ["PULLL"], { commands })).toBe('unknown command "PULLL" for "ollamats"\n\nDid you mean this?\n\tpull\n');
    expect(usageError("Unknown argument: frobnicate", undefined, ["frobnicate"], { commands })).toBe('unknown command "frobnicate" for "ollamats"');
    expect(usageError("Unknown argument: instal", "service", ["service", "instal"])).toBe('unknown command "instal" for "ollamats service"\n\nDid you mean this?\n\tinstall\n');
    expect(usageError("Unknown argument: verbos", "run", ["run", "m", "--verbos"], { flags: ["verbose", "insecure"] })).toBe("unknown flag: --verbos\n\nDid you mean this?\n\t--verbose\n");
    expect(editDistance("kitten", "SITTING")).toBe(3);
    expect(suggestionsFor("", ["list"])).toEqual([]);
  });

  it("takes only flagless list, ps, run and a lone -v without yargs", () => {
    expect(fastRoute(["-v"])).toEqual({ kind: "version" });
    expect(fastRoute(["--version"])).toEqual({ kind: "version" });
    expect(fastRoute(["ls"])).toEqual({ kind: "list" });
    expect(fastRoute(["list", "llama"])).toEqual({ kind: "list", prefix: "llama" });
    expect(fastRoute(["ps"])).toEqual({ kind: "ps" });
    expect(fastRoute(["run", "m", "why", "is", "the", "sky", "blue?"])).toEqual({ kind: "run", model: "m", prompt: ["why", "is", "the", "sky", "blue?"] });
    expect(fastRoute(["run", "m"])).toEqual({ kind: "run", model: "m", prompt: [] });
    // anything else is yargs' to read: flags, help, mistakes, other commands
    for (const args of [[], ["run"], ["run", "m", "--verbose"], ["run", "m", "--", "x"], ["list", "a", "b"], ["-v", "list"], ["help"], ["show", "m"], ["lsit"], ["run", "-h"]]) {
      expect(fastRoute(args), args.join(" ")).toBeUndefined();
    }
  });

});
