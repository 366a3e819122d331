// Templates from model files and requests run under a time budget (a crafted chat template with
// range(10^8) held the event loop until the request timed out), and a chat template that does not
// parse is a 400 naming the problem, not a 500 from inside the template engine.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/daemon/errors.js";
import { renderPrompt, renderSuffix, selectTemplate } from "../../src/daemon/prompt/render.js";
import { withinBudget } from "../../src/daemon/prompt/render-budget.js";

const input = { messages: [{ role: "user", content: "hi" }] };

function refused(fn: () => unknown, re: RegExp): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(400);
  expect((err as Error).message).toMatch(re);
}

describe("template time budget", () => {
  it("stops a Jinja chat template that loops 10^8 times, and nested loops", () => {
    const t = selectTemplate(undefined, "{% for i in range(100000000) %}x{% endfor %}", "<s>", "</s>");
    refused(() => renderPrompt(t, input), /^template error: range\(\) of 100000000 numbers is more than the 10000 a chat template may use$/);
    const ok = selectTemplate(undefined, "{% for i in range(2, 8, 3) %}{{ i }},{% endfor %}{% for i in range(3) %}{{ i }}{% endfor %}", "", "");
    expect(renderPrompt(ok, input)).toBe("2,5,012");
    const nested = selectTemplate(undefined, "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}", "", "");
    const start = Date.now();
    refused(() => renderPrompt(nested, input), /^template error: the template ran longer than 250 ms and was stopped$/);
    expect(Date.now() - start).toBeLessThan(5000);
  });

  it("stops nested loops over the messages in a Go template", () => {
    // alternating roles: consecutive messages of one role are collated into one, as Ollama does
    const messages = Array.from({ length: 200 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `m${i}` }));
    const loop = (inner: string) => `{{range $.Messages}}${inner}{{end}}`;
    const t = selectTemplate(loop(loop(loop(loop("x")))), undefined, "", "");
    refused(() => renderPrompt(t, { messages }), /ran longer than 350 ms/); // 250 ms + 0.5 ms a message
    expect(renderSuffix(selectTemplate("{{.Prompt}}|{{.Suffix}}", undefined, "", ""), "a", "b")).toBe("a|b");
  });

  it("a long conversation gets more time, up to a bound: Gemma 4's template looks back from every message", () => {
    const gemma = selectTemplate(undefined, readFileSync(path.resolve(__dirname, "../fixtures/chat-templates/google-gemma-4-31B-it.jinja"), "utf8"), "<bos>", "<eos>");
    const messages = Array.from({ length: 1001 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `m${i}` }));
    // 270 ms here for 1,001 messages: past the 250 ms a short conversation gets, a 400 before
    const prompt = renderPrompt(gemma, { messages });
    expect(prompt.endsWith("m1000<turn|>\n<|turn>model\n<|channel>thought\n<channel|>")).toBe(true);
    // a hostile template with many messages is still stopped, at the bound
    const many = Array.from({ length: 20_000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "m" }));
    const nested = selectTemplate(undefined, "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}", "", "");
    refused(() => renderPrompt(nested, { messages: many }), /^template error: the template ran longer than 3000 ms and was stopped$/);
  });

  it("the budget is processor time: a render the clock stops while it is off the processor runs again", () => {
    // Atomics.wait holds the thread without running, as the scheduler does on a busy machine
    // (a render of 0.1 ms was seen to take 184 ms there); stopped at 250 ms, it is tried again.
    const cell = new Int32Array(new SharedArrayBuffer(4));
    let tries = 0;
    const slowOnce = () => {
      if (++tries === 1) Atomics.wait(cell, 0, 0, 400);
      return "rendered";
    };
    expect(withinBudget(slowOnce)).toBe("rendered");
    expect(tries).toBe(2);
    // …but not for ever: off the processor every time, it stops after at most eight tries (fewer
    // when the process's other threads' time, which is counted too, adds up to the budget)
    tries = 0;
    const alwaysOff = () => (tries++, Atomics.wait(cell, 0, 0, 150), "never");
    expect(() => withinBudget(alwaysOff, 100)).toThrow(/^the template ran longer than 100 ms and was stopped$/);
    expect(tries).toBeGreaterThan(1);
    expect(tries).toBeLessThanOrEqual(8);
    // and a loop that runs is stopped once it has had the budget (on an idle machine at the first
    // try; where other processes share the processor, after as many as it took to get it)
    tries = 0;
    expect(() =>
      withinBudget(() => {
        tries++;
        for (;;);
      }, 50),
    ).toThrow(/ran longer than 50 ms/);
    expect(tries).toBeGreaterThanOrEqual(1);
    expect(tries).toBeLessThanOrEqual(8);
  });

  it("a chat template that does not parse is a 400 that says how to replace it", () => {
    refused(() => selectTemplate(undefined, "{{", "", ""), /^template error: the model's chat template does not parse; give the model a TEMPLATE in its Modelfile$/);
  });

  it("real templates are untouched, and the budget leaves other errors as they are", () => {
    const t = selectTemplate(undefined, "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}", "", "");
    expect(renderPrompt(t, input)).toBe("<user>hi");
    expect(() => withinBudget(() => { throw new TypeError("boom"); })).toThrow(TypeError);
    expect(withinBudget(() => 42)).toBe(42);
  });
});

describe("template size budget", () => {
  const limit = (16 << 20) + 2 * "hi".length;

  it("stops a Jinja template that doubles a string (fuzz case 741) at the limit, not at V8's", () => {
    const doubling = "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}";
    const rss = process.memoryUsage().rss;
    refused(() => renderPrompt(selectTemplate(undefined, doubling, "", ""), input), new RegExp(`^template error: the template built text of \\d+ characters, more than the ${limit} this prompt may use$`));
    expect(process.memoryUsage().rss - rss).toBeLessThan(256 << 20);
  });

  it("stops lists that double, and padding widths past the limit, in Jinja", () => {
    const lists = "{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{{ ns.a | length }}";
    refused(() => renderPrompt(selectTemplate(undefined, lists, "", ""), input), /^template error: the template built a list of \d+ items, more than the 1000002 this prompt may use$/);
    refused(() => renderPrompt(selectTemplate(undefined, "{{ 'a\nb' | indent(1000000000) }}", "", ""), input), /^template error: the template built text of 1000000000 characters/);
    refused(() => renderPrompt(selectTemplate(undefined, "{{ messages | tojson(indent=100000000) }}", "", ""), input), /^template error: the template built text of/);
  });

  it("stops Python's formatting, padding and slicing at the limit before building the text", () => {
    const rss = process.memoryUsage().rss;
    for (const hostile of [
      "{{ '{:>999999999}'.format(1) }}", "{{ '%999999999d' % 1 }}", "{{ '%*s' % (999999999, 'a') }}", "{{ '%.999999999f' % 1.5 }}", "{{ '{:.999999999e}'.format(2) }}",
      "{{ 'x'.center(999999999) }}", "{{ 'x'.zfill(999999999) }}", "{{ 'x'.ljust(999999999) }}", "{{ 'x' | center(999999999) }}", "{{ 'a b' | wordwrap(1, wrapstring='y' * 9999) * 9999 }}",
    ]) {
      refused(() => renderPrompt(selectTemplate(undefined, hostile, "", ""), input), /^template error: the template built text of \d+ characters/);
    }
    refused(() => renderPrompt(selectTemplate(undefined, "{{ [1] | slice(999999999) | list }}", "", ""), input), /^template error: the template built a list of 999999999 items/);
    expect(process.memoryUsage().rss - rss).toBeLessThan(256 << 20);
  });

  it("stops a Go template that doubles a string with printf, with one bound for all turns", () => {
    const messages = Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "ab" }));
    const doubling = '{{ $s := "xx" }}{{ range .Messages }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ $s }}';
    refused(() => renderPrompt(selectTemplate(doubling, undefined, "", ""), { messages }), /^template error: template: :1:\d+: executing "" at <\$s>: printf returned 33554432 characters, more than the 16777376 allowed$/);
    // many turns of a per-message template share one bound
    const big = "y".repeat(1 << 18);
    const turns = Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: big }));
    const perTurn = `${"{{ .Prompt }}".repeat(8)}{{ .Response }}`; // 9 × 256 KiB a turn, 15 turns: past 16 Mi + 2 × 7.5 Mi
    refused(() => renderPrompt(selectTemplate(perTurn, undefined, "", ""), { messages: turns }), /more than the \d+ allowed/);
  });

  it("real templates render as before; the engines' string builders are native again afterwards", () => {
    const native = String.prototype.repeat;
    const t = selectTemplate(undefined, "{{ messages | tojson(indent=2) }}{{ 'x' | indent(4, true) }}", "", "");
    expect(renderPrompt(t, input)).toContain('"content": "hi"');
    expect(String.prototype.repeat).toBe(native);
    expect("ab".repeat(3)).toBe("ababab");
    const go = selectTemplate("{{ range .Messages }}[{{ .Role }}] {{ .Content }}{{ end }}", undefined, "", "");
    expect(renderPrompt(go, input)).toBe("[user] hi");
  });
});
