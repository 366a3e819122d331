// Go-verified goldens: the generic templates and expected outputs from ollama's template/ package
// (template/*.gotmpl + template/testdata/<name>/<case>, produced by Go's text/template).
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OllamaTemplate, type ApiMessage } from "../../src/template/ollama.js";

const dir = join(import.meta.dirname, "../fixtures/templates/ollama-repo");

const cases: Record<string, ApiMessage[]> = {
  user: [{ role: "user", content: "Hello, how are you?" }],
  "user-assistant-user": [
    { role: "user", content: "Hello, how are you?" },
    { role: "assistant", content: "I'm doing great. How can I help you today?" },
    { role: "user", content: "I'd like to show off how chat templating works!" },
  ],
  "system-user-assistant-user": [
    { role: "system", content: "You are a helpful assistant." },
    { role: "user", content: "Hello, how are you?" },
    { role: "assistant", content: "I'm doing great. How can I help you today?" },
    { role: "user", content: "I'd like to show off how chat templating works!" },
  ],
};

// ollama's test strips one trailing space for these before comparing
const trimTrailingSpace = ["chatqa.gotmpl", "llama2-chat.gotmpl", "mistral-instruct.gotmpl", "openchat.gotmpl", "vicuna.gotmpl"];

describe("ollama template/testdata goldens", () => {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".gotmpl"))) {
    const tmpl = OllamaTemplate.parse(readFileSync(join(dir, file), "utf8"));
    for (const [name, msgs] of Object.entries(cases)) {
      it(`${file} ${name}`, () => {
        let got = tmpl.execute({ messages: msgs });
        if (trimTrailingSpace.includes(file) && got.endsWith(" ")) got = got.slice(0, -1);
        expect(got).toBe(readFileSync(join(dir, "testdata", file, name), "utf8"));
      });
    }
  }
});

// Ports of ollama template/template_test.go (expectations checked by Go).
describe("ollama template_test.go", () => {
  it.each([
    ["{{ .Prompt }}", ["prompt", "response"]],
    ["{{ .System }} {{ .Prompt }}", ["prompt", "response", "system"]],
    ["{{ .System }} {{ .Prompt }} {{ .Response }}", ["prompt", "response", "system"]],
    ["{{ with .Tools }}{{ . }}{{ end }} {{ .System }} {{ .Prompt }}", ["prompt", "response", "system", "tools"]],
    ["{{ range .Messages }}{{ .Role }} {{ .Content }}{{ end }}", ["content", "messages", "role"]],
    ['{{ range .Messages }}{{ if eq .Role "tool" }}Tool Result: {{ .ToolName }} {{ .Content }}{{ end }}{{ end }}', ["content", "messages", "role", "toolname"]],
    [
      '{{- range .Messages }}\n{{- if eq .Role "system" }}SYSTEM:\n{{- else if eq .Role "user" }}USER:\n{{- else if eq .Role "assistant" }}ASSISTANT:\n{{- else if eq .Role "tool" }}TOOL:\n{{- end }} {{ .Content }}\n{{- end }}',
      ["content", "messages", "role"],
    ],
    [
      "{{- if .Messages }}\n{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n{{ else -}}\n{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{ if .Prompt }}<|im_start|>user\n{{ .Prompt }}<|im_end|>\n{{ end }}<|im_start|>assistant\n{{ .Response }}<|im_end|>\n{{- end -}}",
      ["content", "messages", "prompt", "response", "role", "system"],
    ],
  ])("vars of %j", (text, vars) => {
    expect(OllamaTemplate.parse(text).vars()).toEqual(vars);
  });

  it("parse errors", () => {
    expect(() => OllamaTemplate.parse("{{ .Prompt ")).toThrow(/unclosed action/);
    expect(() => OllamaTemplate.parse('{{define "x"}}{{template "x"}}{{end}}{{template "x"}}')).toThrow(/undefined template specified/);
  });

  const mistralTemplates = (prefix: string): string[] => [
    `[INST] ${prefix}{{ .Prompt }}[/INST] `,
    `[INST] ${prefix}{{ .Prompt }}[/INST] {{ .Response }}`,
  ];
  const sys = "{{ if .System }}{{ .System }}\n\n{{ end }}";
  const executeCases: Array<[string, string[], ApiMessage[], string]> = [
    [
      "mistral",
      [
        ...mistralTemplates(sys),
        `[INST] ${sys}\n{{- range .Messages }}\n{{- if eq .Role "user" }}{{ .Content }}[/INST] {{ else if eq .Role "assistant" }}{{ .Content }}[INST] {{ end }}\n{{- end }}`,
      ],
      [
        { role: "user", content: "Hello friend!" },
        { role: "assistant", content: "Hello human!" },
        { role: "user", content: "What is your name?" },
      ],
      "[INST] Hello friend![/INST] Hello human![INST] What is your name?[/INST] ",
    ],
    [
      "mistral system",
      [
        ...mistralTemplates(sys),
        `[INST] ${sys}\n{{- range .Messages }}\n{{- if eq .Role "user" }}{{ .Content }}[/INST] {{ else if eq .Role "assistant" }}{{ .Content }}[INST] {{ end }}\n{{- end }}`,
      ],
      [
        { role: "system", content: "You are a helpful assistant!" },
        { role: "user", content: "Hello friend!" },
        { role: "assistant", content: "Hello human!" },
        { role: "user", content: "What is your name?" },
      ],
      "[INST] You are a helpful assistant!\n\nHello friend![/INST] Hello human![INST] What is your name?[/INST] ",
    ],
    [
      "mistral assistant",
      [
        ...mistralTemplates(""),
        '\n{{- range $i, $m := .Messages }}\n{{- if eq .Role "user" }}[INST] {{ .Content }}[/INST] {{ else if eq .Role "assistant" }}{{ .Content }}{{ end }}\n{{- end }}',
      ],
      [
        { role: "user", content: "Hello friend!" },
        { role: "assistant", content: "Hello human!" },
        { role: "user", content: "What is your name?" },
        { role: "assistant", content: "My name is Ollama and I" },
      ],
      "[INST] Hello friend![/INST] Hello human![INST] What is your name?[/INST] My name is Ollama and I",
    ],
    [
      "chatml",
      [
        "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{ if .Prompt }}<|im_start|>user\n{{ .Prompt }}<|im_end|>\n{{ end }}<|im_start|>assistant\n{{ .Response }}<|im_end|>\n",
        "\n{{- range $index, $_ := .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n",
      ],
      [
        { role: "system", content: "You are a helpful assistant!" },
        { role: "user", content: "Hello friend!" },
        { role: "assistant", content: "Hello human!" },
        { role: "user", content: "What is your name?" },
      ],
      "<|im_start|>system\nYou are a helpful assistant!<|im_end|>\n<|im_start|>user\nHello friend!<|im_end|>\n<|im_start|>assistant\nHello human!<|im_end|>\n<|im_start|>user\nWhat is your name?<|im_end|>\n<|im_start|>assistant\n",
    ],
  ];
  for (const [name, templates, messages, want] of executeCases) {
    templates.forEach((text, i) => {
      it(`execute ${name} #${i}`, () => expect(OllamaTemplate.parse(text).execute({ messages })).toBe(want));
    });
  }

  it("suffix", () => {
    const t = OllamaTemplate.parse("{{- if .Suffix }}<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>\n{{- else }}{{ .Prompt }}\n{{- end }}");
    expect(t.execute({ messages: [{ role: "user", content: "hello" }] })).toBe("hello");
    expect(t.execute({ prompt: "def add(", suffix: "return x" })).toBe("<PRE> def add( <SUF>return x <MID>");
  });

  it("arguments print as JSON and range as a map", () => {
    const messages: ApiMessage[] = [{ role: "assistant", tool_calls: [{ function: { name: "get_weather", arguments: { location: "Tokyo", unit: "celsius" } } }] }];
    const json = OllamaTemplate.parse("{{- range .Messages }}{{- range .ToolCalls }}{{ .Function.Arguments }}{{- end }}{{- end }}").execute({ messages });
    expect(JSON.parse(json)).toEqual({ location: "Tokyo", unit: "celsius" });
    const ranged = OllamaTemplate.parse("{{- range .Messages }}{{- range .ToolCalls }}{{- range $k, $v := .Function.Arguments }}{{ $k }}={{ $v }};{{- end }}{{- end }}{{- end }}");
    expect(ranged.execute({ messages: [{ role: "assistant", tool_calls: [{ function: { name: "w", arguments: { city: "Tokyo" } } }] }] })).toBe("city=Tokyo;");
  });

  it("properties print as JSON and range as a map", () => {
    const tools = [{ type: "function", function: { name: "get_weather", description: "Get weather", parameters: { type: "object", properties: { location: { type: "string", description: "City name" } } } } }];
    const messages: ApiMessage[] = [{ role: "user", content: "test" }];
    const json = OllamaTemplate.parse("{{- range .Messages }}{{- end }}{{- range .Tools }}{{ .Function.Parameters.Properties }}{{- end }}").execute({ messages, tools });
    expect(json).toBe('{"location":{"type":"string","description":"City name"}}');
    const ranged = OllamaTemplate.parse("{{- range .Messages }}{{- end }}{{- range .Tools }}{{- range $name, $prop := .Function.Parameters.Properties }}{{ $name }}:{{ $prop.Type }};{{- end }}{{- end }}");
    expect(ranged.execute({ messages, tools })).toBe("location:string;");
  });
});
