// Jinja2's language and builtins, one snippet at a time (test/fixtures/jinja-snippets.txt): tests with
// arguments, printf-style `%` and str.format specs, Python's arithmetic and ordering, tuples, number
// literals, raw and with blocks, loop helpers, cyclers and joiners, every builtin filter a chat template
// might call and Python's str methods. Each must render as Python's Jinja2 renders it
// (test/helpers/jinja2_render.py, the environment transformers uses), or fail where it fails.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jinjaContext, renderPrompt, selectTemplate } from "../../src/daemon/prompt/render.js";

const SETS = "{% set x = {'a': 1, 'b': [1, 2]} %}{% set s = 'Hello World foo bar' %}{% set n = 7 %}{% set f = 3.14159 %}{% set l = [3, 1, 2] %}";
const snippets = readFileSync(path.resolve(__dirname, "../fixtures/jinja-snippets.txt"), "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.startsWith("##"));
const input = { messages: [{ role: "user" as const, content: "hi" }] };

function ours(template: string): string {
  try {
    return "ok:" + renderPrompt(selectTemplate(undefined, template, "", ""), input);
  } catch (err) {
    return "error:" + (err as Error).message;
  }
}

function python(templates: string[]): string[] {
  const base = selectTemplate(undefined, "{{ 1 }}", "", "");
  const context = base.kind === "jinja" ? jinjaContext(base, input) : {};
  const helper = path.resolve(__dirname, "../helpers/jinja2_render.py");
  const out = spawnSync("python3", [helper], { input: JSON.stringify({ now_ms: Date.now(), jobs: templates.map((template) => ({ template, context })) }), encoding: "utf8", maxBuffer: 1 << 26 });
  if (out.status !== 0) throw new Error(`python3 ${helper} failed: ${out.stderr}`);
  return (JSON.parse(out.stdout) as Array<{ ok?: string; error?: string }>).map((r) => (r.ok !== undefined ? "ok:" + r.ok : "error:" + r.error));
}

describe("Jinja2 builtins render as Python renders them", () => {
  it(`${snippets.length} snippets: the same text, or an error on both sides`, () => {
    const templates = snippets.map((s) => SETS + s);
    const expected = python(templates);
    const differ: string[] = [];
    templates.forEach((t, i) => {
      const got = ours(t), want = expected[i]!;
      const same = got === want || (got.startsWith("error:") && want.startsWith("error:"));
      if (!same) differ.push(`${snippets[i]}\n  ours:   ${JSON.stringify(got)}\n  python: ${JSON.stringify(want)}`);
    });
    expect(differ, differ.join("\n")).toEqual([]);
    // the snippets must exercise rendering, not only refusals
    expect(expected.filter((r) => r.startsWith("ok:")).length).toBeGreaterThan(snippets.length * 0.85);
  });

  it("a template saved with Windows line breaks renders as Python renders it (its lexer makes them \\n)", () => {
    const template = "{% for m in messages %}\r\n{% if m.role == 'user' %}\r\n<|user|>\r\n{{ m.content }}{{ '\r\nend' }}\r\n{% endif %}\r\n{% endfor %}\r\n{{ 'a\rb' | length }}\r\n";
    const got = ours(template);
    expect(got).toBe(python([template])[0]);
    expect(got).not.toContain("\r");
  });

  it("a template error is a 400 that names the cause", () => {
    const template = selectTemplate(undefined, "{{ '%d' % 'a' }}", "", "");
    expect(() => renderPrompt(template, input)).toThrow(/real number is required, not str/);
    expect(() => renderPrompt(selectTemplate(undefined, "{{ 1 // 0 }}", "", ""), input)).toThrow(/division or modulo by zero/);
  });
});
