// Every real chat template in test/fixtures/chat-templates, rendered by the daemon (renderPrompt) and
// by Python's Jinja2 as transformers' apply_chat_template renders it (test/helpers/jinja2_render.py),
// over a handful of conversations, must give the same bytes. Python gets the context render.ts
// builds (jinjaContext): the same messages, tools, add_generation_prompt, bos/eos and think flags,
// after any polyfill the template's capabilities call for. Where Python raises on that context the
// daemon answers a 400 or renders (llama.cpp's leniency), and the summary says which.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { jinjaCapabilities, jinjaContext, renderPrompt, selectTemplate, type RenderInput, type RenderMessage } from "../../src/daemon/prompt/render.js";
import { ALL_CAPABILITIES, type JinjaCapabilities } from "../../src/daemon/prompt/jinja-capabilities.js";

// JINJA_TEMPLATES_DIR points it at another directory of templates (to try a collection before adding it)
const DIR = process.env.JINJA_TEMPLATES_DIR ? path.resolve(process.env.JINJA_TEMPLATES_DIR) : path.resolve(__dirname, "../fixtures/chat-templates");
const HELPER = path.resolve(__dirname, "../helpers/jinja2_render.py");
const NOW = new Date(2025, 6, 4, 9, 30, 15).getTime(); // both renderers read this clock (strftime_now)

const tools = [
  {
    type: "function",
    function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", required: ["city"], properties: { city: { type: "string", description: "City" } } } },
  },
];
const call = (id: string, city = "Paris") => ({ id, function: { index: 0, name: "get_weather", arguments: { city } } });
const CONVERSATIONS: Record<string, RenderInput> = {
  plain: { messages: [{ role: "user", content: "hello" }] },
  system: { messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "hello" }] },
  multi: {
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "hello" },
      { role: "assistant", content: "Hi there." },
      { role: "user", content: "How are you?" },
    ],
  },
  tool_call: { messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "hello" }, { role: "assistant", content: "", tool_calls: [call("call_k3j2h5g1")] }], tools },
  tool_result: {
    messages: [
      { role: "user", content: "Weather in Paris and Lyon?" },
      { role: "assistant", content: "", tool_calls: [call("call_k3j2h5g1"), call("call_8hd73hsa", "Lyon")] },
      { role: "tool", content: "18C", tool_name: "get_weather", tool_call_id: "call_k3j2h5g1" },
      { role: "tool", content: "21C", tool_name: "get_weather", tool_call_id: "call_8hd73hsa" },
    ] as RenderMessage[],
    tools,
  },
  think_on: {
    messages: [{ role: "user", content: "hello" }, { role: "assistant", content: "Hi.", thinking: "The user greets me." }, { role: "user", content: "And?" }],
    think: true,
    thinkLevel: "high",
    isThinkSet: true,
  },
  think_off: { messages: [{ role: "user", content: "hello" }], think: false, isThinkSet: true },
  unicode: { messages: [{ role: "system", content: "Réponds en français 🇫🇷" }, { role: "user", content: "héllo 世界 🌍 \"quoted\" <b>&</b> \\ \u2028" }] },
};

interface PyResult {
  ok?: string;
  error?: string;
  sandbox?: string;
}
interface Case {
  template: string;
  conversation: string;
  ours: { ok: string } | { status?: number; error: string };
  polyfilled: boolean;
  adapted: PyResult;
  raw: PyResult;
}

function python(now: number, jobs: Array<{ template: string; context: unknown }>): PyResult[] {
  const out = spawnSync("python3", [HELPER], { input: JSON.stringify({ now_ms: now, jobs }), maxBuffer: 1 << 28, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`python3 ${HELPER} failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as PyResult[];
}
const missing = (caps: JinjaCapabilities): string[] => Object.entries(ALL_CAPABILITIES).filter(([k]) => !caps[k as keyof JinjaCapabilities]).map(([k]) => k);

const files = readdirSync(DIR).filter((f) => f.endsWith(".jinja")).sort();
const cases: Case[] = [];
const capsOf = new Map<string, string[]>();

beforeAll(() => {
  vi.useFakeTimers({ now: NOW, toFake: ["Date"] });
  const jobs: Array<{ template: string; context: unknown }> = [];
  for (const file of files) {
    const source = readFileSync(path.join(DIR, file), "utf8");
    const t = selectTemplate(undefined, source, "<s>", "</s>");
    if (t.kind !== "jinja") throw new Error(`${file}: not a Jinja template`);
    capsOf.set(file, missing(jinjaCapabilities(t)));
    for (const [name, input] of Object.entries(CONVERSATIONS)) {
      let ours: Case["ours"];
      try {
        ours = { ok: renderPrompt(t, input) };
      } catch (err) {
        ours = { status: (err as { status?: number }).status, error: (err as Error).message };
      }
      const adapted = JSON.parse(JSON.stringify(jinjaContext(t, input))) as { messages: unknown };
      const raw = JSON.parse(JSON.stringify(jinjaContext(t, input, false))) as { messages: unknown };
      const polyfilled = JSON.stringify(adapted.messages) !== JSON.stringify(raw.messages);
      jobs.push({ template: source, context: adapted }, { template: source, context: raw });
      cases.push({ template: file, conversation: name, ours, polyfilled, adapted: {}, raw: {} });
    }
  }
  const results = python(NOW, jobs);
  cases.forEach((c, i) => {
    c.adapted = results[2 * i]!;
    c.raw = results[2 * i + 1]!;
  });
});
afterAll(() => {
  vi.useRealTimers();
});

/** One word a case: equal, polyfilled (equal to Python given the adapted messages), or how it differs. */
function verdict(c: Case): string {
  const mutable = c.adapted.sandbox === "mutable" ? "+mutable" : "";
  if ("ok" in c.ours && c.adapted.ok !== undefined) {
    if (c.ours.ok !== c.adapted.ok) return "DIFFERENT";
    return c.polyfilled ? (c.raw.ok !== undefined ? "polyfilled(python-raw-renders)" : "polyfilled") : `equal${mutable}`;
  }
  if (c.adapted.ok !== undefined) return "OURS-FAILS";
  return "ok" in c.ours ? "python-raises/ours-renders" : `both-raise/${c.ours.status}`;
}

describe("chat templates render byte for byte as Python Jinja2 renders them", () => {
  it("covers every template with every conversation", () => {
    if (!process.env.JINJA_TEMPLATES_DIR) expect(files.length).toBeGreaterThanOrEqual(68);
    expect(cases).toHaveLength(files.length * Object.keys(CONVERSATIONS).length);
  });

  it.each(files)("%s", (file) => {
    for (const c of cases.filter((x) => x.template === file)) {
      const where = `${file} / ${c.conversation}`;
      if (c.adapted.ok !== undefined) {
        // Python renders the context we render: the bytes must agree.
        expect("ok" in c.ours ? c.ours.ok : c.ours, where).toBe(c.adapted.ok);
      } else if (!("ok" in c.ours)) {
        // Both raise: ours is a clean 400 naming the template's complaint.
        expect(c.ours.status, where).toBe(400);
        expect(c.ours.error, where).toMatch(/^template error: /);
      }
      // Python raises and we render: llama.cpp's leniency (str + undefined, list.append); stated in the summary.
    }
  });

  it("prints a per-template summary", () => {
    const lines = files.map((file) => {
      const mine = cases.filter((c) => c.template === file);
      const counts = new Map<string, string[]>();
      for (const c of mine) counts.set(verdict(c), [...(counts.get(verdict(c)) ?? []), c.conversation]);
      const summary = [...counts].map(([v, names]) => (v === "equal" ? `equal ${names.length}/${mine.length}` : `${v}: ${names.join(",")}`)).join("; ");
      const gaps = capsOf.get(file)!;
      return `${file.replace(/\.jinja$/, "").padEnd(48)} ${summary}${gaps.length ? `  [polyfills: ${gaps.join(", ")}]` : ""}`;
    });
    console.log(`Jinja2 differential (${cases.length} renders):\n${lines.join("\n")}`);
    expect(cases.filter((c) => verdict(c) === "DIFFERENT" || verdict(c) === "OURS-FAILS")).toEqual([]);
  });
});

/** Our render of a small template, asserted equal to Python's. */
function likePython(source: string): string {
  const input = { messages: [{ role: "user", content: "hi" }] };
  const t = selectTemplate(undefined, source, "", "");
  if (t.kind !== "jinja") throw new Error("not a Jinja template");
  const ours = renderPrompt(t, input);
  expect(ours).toBe(python(NOW, [{ template: source, context: jinjaContext(t, input) }])[0]!.ok);
  return ours;
}

describe("Python's attribute lookup", () => {
  it("d.items is the dict's method even where it has a key 'items' (a tool parameter so named); d['items'] is the key; a namespace's is its own", () => {
    const source =
      "{% set d = {'items': 1, 'keys': 2, 'get': 3} %}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d.keys() | list }}|{{ d['items'] }}|{{ d.get('get') }}|" +
      "{% set ns = namespace(items=[7]) %}{{ ns.items }}";
    expect(likePython(source)).toBe("items=1;keys=2;get=3;['items', 'keys', 'get']|1|3|[7]");
  });
});

describe("Python's operators on sequences", () => {
  it("repeats a string or a list times an int as Python does", () => {
    expect(likePython("{{ '=' * 3 }}|{{ 2 * 'ab' }}|{{ 'x' * 0 }}|{{ ([1, 2] * 2) | length }}|{{ messages[0].content * 2 }}")).toBe("===|abab||4|hihi");
  });

  it("prints None as Python does, undefined as nothing, and no statement", () => {
    const source = "{% set ns = namespace(xs=[]) %}{% macro m() %}M{% endmacro %}{{ none }}|{{ nothing }}|{{ ns.xs.append(1) }}|{{ ns.xs }}|{{ messages[0].missing }}|{{ m() }}|{{ none if true else 1 }}";
    expect(likePython(source)).toBe("None||None|[1]||M|None");
  });
});

describe("random conversations", () => {
  // seeded: the same cases on every run; contents with quotes, escapes, tags' characters, emoji
  // and line separators; tools whose parameters are named like dict methods (items, keys, get);
  // tool calls with nested arguments, some as JSON strings; thinking, think on and off
  let seed = 20261204;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) >>> 8) / (1 << 23);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(a: readonly T[]): T => a[int(a.length)]!;
  const CH = ["a", " ", "\n", "é", "😀", '"', "'", "\\", "{", "}", "<", ">", "&", "%", "#", "\t", "\u2028", "[", "]", "0"];
  const str = (n = 10) => Array.from({ length: int(n) }, () => pick(CH)).join("");
  const value = (d: number): unknown => {
    switch (int(d > 1 ? 5 : 7)) {
      case 0:
        return str();
      case 1:
        return pick([0, 1, -1, 1.5, 0.1, 1e-7, 1e21, 123456789012, -0.25, 2 ** 53, 100]);
      case 2:
        return rnd() < 0.5;
      case 3:
        return null;
      case 4:
        return pick(["Paris", "x y", ""]);
      case 5:
        return Array.from({ length: int(3) }, () => value(d + 1));
      default:
        return Object.fromEntries(Array.from({ length: 1 + int(3) }, () => [pick(["a", "key", "Zed", "é", "x y", "1", "items"]), value(d + 1)]));
    }
  };
  const someTools = () =>
    Array.from({ length: 1 + int(2) }, (_, i) => ({
      type: "function",
      function: {
        name: `tool_${i}`,
        description: str(8),
        parameters: {
          type: "object",
          properties: { [pick(["p", "items", "keys", "values", "get", "type"])]: { type: pick(["string", "number", "array", "object", "boolean"]), description: str(5) }, q: { type: "integer", minimum: 0 } },
          required: rnd() < 0.5 ? ["q"] : [],
        },
      },
    }));
  const conversation = (): RenderInput => {
    const ts = rnd() < 0.5 ? someTools() : undefined;
    const messages: RenderMessage[] = rnd() < 0.5 ? [{ role: "system", content: str(20) }] : [];
    const turns = 1 + int(3);
    for (let t = 0; t < turns; t++) {
      messages.push({ role: "user", content: str(20) || "hi" });
      if (t === turns - 1 && rnd() < 0.7) break;
      const calls = ts && rnd() < 0.5;
      const args = rnd() < 0.2 ? JSON.stringify(value(1)) : { q: int(5), p: value(1) };
      messages.push({
        role: "assistant",
        content: calls && rnd() < 0.5 ? "" : str(20) || "ok",
        ...(rnd() < 0.3 ? { thinking: str(15) || "hmm" } : {}),
        ...(calls ? { tool_calls: [{ id: `call_${t}abcdefg`, function: { index: 0, name: "tool_0", arguments: args } }] } : {}),
      });
      if (calls) messages.push({ role: "tool", content: str(10) || "18C", tool_name: "tool_0", tool_call_id: `call_${t}abcdefg` }, { role: "user", content: "and?" });
    }
    const think = rnd() < 0.4 ? { think: rnd() < 0.6, isThinkSet: true, thinkLevel: pick(["high", "low", "medium"]) } : {};
    return { messages, tools: ts, ...think };
  };

  it("render byte for byte as Python renders them, over every template", () => {
    vi.useFakeTimers({ now: NOW, toFake: ["Date"] });
    const jobs: Array<{ template: string; context: unknown }> = [];
    const ours: Array<{ file: string; text?: string }> = [];
    for (let round = 0; round < 3; round++) {
      for (const file of files) {
        const source = readFileSync(path.join(DIR, file), "utf8");
        const t = selectTemplate(undefined, source, "<s>", "</s>");
        if (t.kind !== "jinja") throw new Error(`${file}: not a Jinja template`);
        const input = conversation();
        let text: string | undefined;
        try {
          text = renderPrompt(t, input);
        } catch {
          text = undefined;
        }
        jobs.push({ template: source, context: JSON.parse(JSON.stringify(jinjaContext(t, input))) });
        ours.push({ file, text });
      }
    }
    const results = python(NOW, jobs);
    vi.useRealTimers();
    const differ = ours.filter((o, i) => results[i]!.ok !== undefined && o.text !== results[i]!.ok).map((o) => o.file);
    if (process.env.JINJA_DIFF_SHOW) ours.forEach((o, i) => results[i]!.ok !== undefined && o.text !== results[i]!.ok && console.log(o.file, JSON.stringify(o.text)?.slice(0, 3000), "\nPY", JSON.stringify(results[i]!.ok).slice(0, 3000), "\nCTX", JSON.stringify(jobs[i]!.context).slice(0, 1500)));
    expect(differ).toEqual([]);
    // Python renders nearly all of them: the comparison is not vacuous
    expect(results.filter((r) => r.ok !== undefined).length).toBeGreaterThan(jobs.length * 0.9);
  });
});
