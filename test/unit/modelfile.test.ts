import { describe, expect, it } from "vitest";
import {
  DEPRECATED_OPTIONS,
  ModelfileError,
  OPTION_TYPES,
  formatModelfile,
  formatModelfileCommand,
  parseModelfile,
  parseParameterValue,
  quoteModelfileValue,
  type ModelfileCommand,
} from "../../src/registry/modelfile.js";

const quiet = { onWarning: () => {} };
const parse = (s: string | Uint8Array) => parseModelfile(s, quiet);
const errorOf = (s: string): Error => {
  try {
    parse(s);
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a parse error");
};

describe("parseModelfile", () => {
  it("parses every instruction", () => {
    const text = `# a comment
FROM llama3.2
  # indented comment
from ./model.gguf
ADAPTER ./lora.gguf
TEMPLATE """{{ if .System }}<|system|>
{{ .System }}{{ end }}<|user|>
{{ .Prompt }}"""
SYSTEM You are a helpful assistant.
PARAMETER temperature 0.7
PARAMETER stop "<|user|>"
PARAMETER stop <|system|>
parameter num_ctx 4096
MESSAGE user Is Toronto in Canada?
MESSAGE assistant yes
LICENSE """MIT
License"""
LICENSE second
REQUIRES 0.14.0
DRAFT ./draft.gguf
RENDERER qwen3
PARSER qwen3
`;
    expect(parse(text)).toEqual<ModelfileCommand[]>([
      { name: "model", args: "llama3.2" },
      { name: "model", args: "./model.gguf" },
      { name: "adapter", args: "./lora.gguf" },
      { name: "template", args: "{{ if .System }}<|system|>\n{{ .System }}{{ end }}<|user|>\n{{ .Prompt }}" },
      { name: "system", args: "You are a helpful assistant." },
      { name: "parameter", args: "temperature 0.7" },
      { name: "parameter", args: "stop <|user|>" },
      { name: "parameter", args: "stop <|system|>" },
      { name: "parameter", args: "num_ctx 4096" },
      { name: "message", args: "user Is Toronto in Canada?" },
      { name: "message", args: "assistant yes" },
      { name: "license", args: "MIT\nLicense" },
      { name: "license", args: "second" },
      { name: "requires", args: "0.14.0" },
      { name: "draft", args: "./draft.gguf" },
      { name: "renderer", args: "qwen3" },
      { name: "parser", args: "qwen3" },
    ]);
  });

  it("handles quoting, whitespace and line endings", () => {
    expect(parse('FROM m\nSYSTEM "  padded  "\n')).toContainEqual({ name: "system", args: "  padded  " });
    expect(parse('FROM m\nSYSTEM "multi\nline"')).toContainEqual({ name: "system", args: "multi\nline" });
    expect(parse("FROM m\nSYSTEM    spaced   out   \n")).toContainEqual({ name: "system", args: "spaced   out" });
    expect(parse("FROM m\nSYSTEM a\tb\n")).toContainEqual({ name: "system", args: "a\tb" });
    expect(parse('FROM m\nSYSTEM say "hi"\n')).toContainEqual({ name: "system", args: 'say "hi"' });
    expect(parse('FROM m\nTEMPLATE """a "quoted" b"""')).toContainEqual({ name: "template", args: 'a "quoted" b' });
    expect(parse("FROM m\nSYSTEM # not a comment\n")).toContainEqual({ name: "system", args: "# not a comment" });
    expect(parse("FROM m\r\nSYSTEM crlf\r\n")).toEqual([
      { name: "model", args: "m" },
      { name: "system", args: "crlf" },
    ]);
    expect(parse("\n\n  FROM   m  \n\n")).toEqual([{ name: "model", args: "m" }]);
  });

  it("tolerates UTF-8 and UTF-16 byte order marks", () => {
    expect(parse("\uFEFFFROM m")).toEqual([{ name: "model", args: "m" }]);
    expect(parse(Buffer.from("\uFEFFFROM m\n", "utf8"))).toEqual([{ name: "model", args: "m" }]);
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("FROM m\nSYSTEM é\n", "utf16le")]);
    expect(parse(le)).toEqual([
      { name: "model", args: "m" },
      { name: "system", args: "é" },
    ]);
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from("FROM m\n", "utf16le").swap16()]);
    expect(parse(be)).toEqual([{ name: "model", args: "m" }]);
  });

  it("requires a FROM line", () => {
    expect(errorOf("SYSTEM hi\n")).toBeInstanceOf(ModelfileError);
    expect(errorOf("SYSTEM hi\n").message).toBe("no FROM line");
    expect(errorOf("# only a comment").message).toBe("no FROM line");
  });

  it("reports unknown instructions with the valid ones and the line", () => {
    const e = errorOf("FROM m\n\nFOO bar\n") as ModelfileError;
    expect(e.line).toBe(3);
    expect(e.message).toBe(
      '(line 3): command must be one of "from", "license", "template", "system", "adapter", "draft", "renderer", "parser", "parameter", "message", or "requires"',
    );
    expect(errorOf("FROM\n").message).toMatch(/^\(line 1\): command must be one of/);
    expect(errorOf("FR0M m\n").message).toMatch(/^\(line 1\): command must be one of/);
  });

  it("validates message roles", () => {
    expect(errorOf("FROM m\nMESSAGE tool hi\n").message).toBe(
      '(line 2): message role must be one of "system", "user", or "assistant"',
    );
    expect(errorOf("FROM m\nMESSAGE User hi\n").message).toMatch(/message role must be/);
  });

  it("validates parameters", () => {
    expect(errorOf("FROM m\nPARAMETER foo 1\n").message).toBe("(line 2): unknown parameter 'foo'");
    expect(errorOf("FROM m\nPARAMETER Temperature 1\n").message).toBe("(line 2): unknown parameter 'Temperature'");
    expect(errorOf("FROM m\nPARAMETER num_ctx big\n").message).toBe("(line 2): invalid int value [big]");
    expect(errorOf("FROM m\nPARAMETER top_p x\n").message).toBe("(line 2): invalid float value [x]");
    expect(errorOf("FROM m\nPARAMETER use_mmap maybe\n").message).toBe("(line 2): invalid bool value [maybe]");
    expect(errorOf("FROM m\nPARAMETER top-k 1\n").message).toMatch(/^\(line 2\): unexpected EOF: top/);
  });

  it("warns about and drops deprecated parameters", () => {
    const warnings: string[] = [];
    const cmds = parseModelfile("FROM m\nPARAMETER mirostat 2\nPARAMETER tfs_z 1.0\nPARAMETER top_k 10\n", {
      onWarning: (m) => warnings.push(m),
    });
    expect(cmds).toEqual([
      { name: "model", args: "m" },
      { name: "parameter", args: "top_k 10" },
    ]);
    expect(warnings).toEqual(["warning: parameter mirostat is deprecated", "warning: parameter tfs_z is deprecated"]);
  });

  it("validates REQUIRES as semver", () => {
    expect(parse("FROM m\nREQUIRES v0.14.0-rc1\n")).toContainEqual({ name: "requires", args: "v0.14.0-rc1" });
    expect(parse("FROM m\nREQUIRES 1.2\n")).toContainEqual({ name: "requires", args: "1.2" });
    expect(errorOf("FROM m\nREQUIRES latest\n").message).toBe("(line 2): requires must be a valid semver (e.g. 0.14.0)");
  });

  it("fails on an unterminated quote", () => {
    const e = errorOf('FROM m\nSYSTEM """never closed\nstill open\n') as ModelfileError;
    expect(e.message).toBe("(line 2): unexpected EOF");
  });
});

describe("parseParameterValue", () => {
  it("types values per Ollama's options table", () => {
    expect(parseParameterValue("num_ctx", ["4096"])).toBe(4096);
    expect(parseParameterValue("seed", ["-1"])).toBe(-1);
    expect(parseParameterValue("temperature", ["0.7"])).toBe(0.7);
    expect(parseParameterValue("top_p", [".9"])).toBe(0.9);
    expect(parseParameterValue("min_p", ["1e-2"])).toBe(0.01);
    expect(parseParameterValue("use_mmap", ["false"])).toBe(false);
    expect(parseParameterValue("use_mmap", ["T"])).toBe(true);
    expect(parseParameterValue("stop", ["a", "b"])).toEqual(["a", "b"]);
  });
  it("rejects bad values with Ollama's messages", () => {
    expect(() => parseParameterValue("nope", ["1"])).toThrow("unknown parameter 'nope'");
    expect(() => parseParameterValue("toString", ["1"])).toThrow("unknown parameter 'toString'");
    expect(() => parseParameterValue("num_ctx", ["1.5"])).toThrow("invalid int value [1.5]");
    expect(() => parseParameterValue("num_ctx", ["99999999999999999999"])).toThrow("invalid int value");
    expect(() => parseParameterValue("temperature", ["1e39"])).toThrow("invalid float value [1e39]");
    expect(() => parseParameterValue("temperature", ["nan"])).toThrow("invalid float value");
    expect(() => parseParameterValue("use_mmap", ["yes"])).toThrow("invalid bool value [yes]");
  });
  it("knows every option, deprecated ones included", () => {
    for (const k of ["num_ctx", "num_batch", "num_gpu", "main_gpu", "use_mmap", "num_thread", "draft_num_predict"]) {
      expect(OPTION_TYPES[k], k).toBeDefined();
    }
    for (const k of ["num_keep", "seed", "num_predict", "top_k", "top_p", "min_p", "typical_p", "repeat_last_n"]) {
      expect(OPTION_TYPES[k], k).toBeDefined();
    }
    for (const k of ["temperature", "repeat_penalty", "presence_penalty", "frequency_penalty", "stop"]) {
      expect(OPTION_TYPES[k], k).toBeDefined();
    }
    for (const k of DEPRECATED_OPTIONS) expect(OPTION_TYPES[k], k).toBeDefined();
  });
});

describe("formatModelfile", () => {
  it("quotes values as `ollama show --modelfile` does", () => {
    expect(quoteModelfileValue("plain")).toBe("plain");
    expect(quoteModelfileValue("two\nlines")).toBe('"two\nlines"');
    expect(quoteModelfileValue(" lead")).toBe('" lead"');
    expect(quoteModelfileValue("trail ")).toBe('"trail "');
    expect(quoteModelfileValue('say "hi"\nthere')).toBe('"""say "hi"\nthere"""');
    expect(quoteModelfileValue('say "hi"')).toBe('say "hi"');
  });

  it("prints each command on its own line", () => {
    expect(formatModelfileCommand({ name: "model", args: "/path/to/blob" })).toBe("FROM /path/to/blob");
    expect(formatModelfileCommand({ name: "parameter", args: "stop <|eot_id|>" })).toBe("PARAMETER stop <|eot_id|>");
    expect(formatModelfileCommand({ name: "message", args: "user hello\nworld" })).toBe('MESSAGE user "hello\nworld"');
    expect(formatModelfileCommand({ name: "template", args: "{{ .Prompt }}" })).toBe("TEMPLATE {{ .Prompt }}");
    expect(formatModelfile([{ name: "model", args: "m" }, { name: "system", args: "s" }])).toBe("FROM m\nSYSTEM s\n");
  });

  it("round-trips through the parser", () => {
    const cmds: ModelfileCommand[] = [
      { name: "model", args: "registry.ollama.ai/library/llama3.2:latest" },
      { name: "template", args: '{{- if .System }}<|start_header_id|>system<|end_header_id|>\n\n{{ .System }}<|eot_id|>{{ end }}\n"quoted"' },
      { name: "system", args: "  keep my spaces  " },
      { name: "system", args: '"starts with a quote" and goes on' },
      { name: "parameter", args: "stop <|eot_id|>" },
      { name: "parameter", args: "stop  padded stop " },
      { name: "parameter", args: "temperature 0.6" },
      { name: "message", args: "user what is 2+2?" },
      { name: "message", args: "assistant 4\n(obviously)" },
      { name: "license", args: 'Line one\n"Line" two' },
      { name: "adapter", args: "/tmp/lora.gguf" },
      { name: "requires", args: "0.14.0" },
    ];
    expect(parse(formatModelfile(cmds))).toEqual(cmds);
  });
});
