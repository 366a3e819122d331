import { describe, expect, it } from "vitest";
import { StopMatcher } from "../../src/backends/stop-matcher.js";

function run(stops: string[], pieces: string[]): { out: string; stopped: boolean } {
  const m = new StopMatcher(stops);
  let out = "";
  for (const p of pieces) {
    const s = m.push(p);
    out += s.emit;
    if (s.stopped) return { out, stopped: true };
  }
  return { out: out + m.flush(), stopped: false };
}

describe("StopMatcher", () => {
  it("passes text through without stops", () => {
    expect(run([], ["a", "b"])).toEqual({ out: "ab", stopped: false });
  });
  it("cuts before a stop split across pieces, with a leading space", () => {
    expect(run([" que"], ["hello", " q", "ue", "ry"])).toEqual({ out: "hello", stopped: true });
  });
  it("holds back a possible stop prefix and releases it when it is not one", () => {
    const m = new StopMatcher(["<|end|>"]);
    expect(m.push("abc<|e")).toEqual({ emit: "abc", stopped: false });
    expect(m.push("x")).toEqual({ emit: "<|ex", stopped: false });
  });
  it("the earliest of several stops wins", () => {
    expect(run(["END", "ST"], ["xx STOP END"])).toEqual({ out: "xx ", stopped: true });
  });
  it("flushes held text at the end", () => {
    expect(run(["stop"], ["a sto"])).toEqual({ out: "a sto", stopped: false });
  });
});

describe("StopMatcher.pushControl (a control token's text)", () => {
  it("ends the output when the token is a stop, releasing what was held before it", () => {
    const m = new StopMatcher(["<|eot_id|>", "<|start_header_id|>", "END"]);
    expect(m.push("one EN")).toEqual({ emit: "one ", stopped: false });
    expect(m.pushControl("<|start_header_id|>")).toEqual({ emit: "EN", stopped: true });
  });
  it("drops a token that is no stop, and releases the held text", () => {
    const m = new StopMatcher(["<|eot_id|>", "<|e"]);
    expect(m.push("a <")).toEqual({ emit: "a ", stopped: false });
    expect(m.pushControl("<|begin_of_text|>")).toEqual({ emit: "<", stopped: false });
    expect(m.push("b")).toEqual({ emit: "b", stopped: false });
  });
  it("stops on a stop that held text and the token make together, cut where it starts", () => {
    const m = new StopMatcher(["x<|im_end|>"]);
    expect(m.push("ax")).toEqual({ emit: "a", stopped: false });
    expect(m.pushControl("<|im_end|>")).toEqual({ emit: "", stopped: true });
  });
  it("drops every control token when there are no stops", () => {
    const m = new StopMatcher([]);
    expect(m.pushControl("<|eot_id|>")).toEqual({ emit: "", stopped: false });
  });
});

describe("StopMatcher against the rule itself, on random text", () => {
  /** Seeded, so a failure names its case. */
  function rng(seed: number) {
    let x = seed >>> 0 || 1;
    return () => ((x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32);
  }

  it("emits exactly the text before the first stop, whatever the pieces, and holds back only a stop's start", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const r = rng(seed);
      const word = (n: number) => Array.from({ length: n }, () => "ab"[Math.floor(r() * 2)]).join("");
      const stops = Array.from({ length: 1 + Math.floor(r() * 3) }, () => word(1 + Math.floor(r() * 6)));
      const text = word(Math.floor(r() * 40));
      const pieces: string[] = [];
      for (let i = 0; i < text.length; ) {
        const n = 1 + Math.floor(r() * 4);
        pieces.push(text.slice(i, i + n));
        i += n;
      }
      // The rule: the output ends where a stop first becomes whole as text arrives.
      let expected = { out: text, stopped: false };
      let seen = "";
      for (const p of pieces) {
        seen += p;
        const at = Math.min(...stops.map((s) => seen.indexOf(s)).filter((i) => i !== -1));
        if (Number.isFinite(at)) {
          expected = { out: seen.slice(0, at), stopped: true };
          break;
        }
      }
      expect(run(stops, pieces), `seed ${seed}: stops ${JSON.stringify(stops)}, pieces ${JSON.stringify(pieces)}`).toEqual(expected);
      // What is held back after each piece is the longest end of the text that starts a stop.
      const m = new StopMatcher(stops);
      let sent = "";
      seen = "";
      for (const p of pieces) {
        seen += p;
        const step = m.push(p);
        sent += step.emit;
        if (step.stopped) break;
        let held = 0;
        for (const s of stops) for (let n = Math.min(s.length - 1, seen.length); n > held; n--) if (seen.endsWith(s.slice(0, n))) held = n;
        expect(seen.length - sent.length, `seed ${seed} after ${JSON.stringify(seen)}`).toBe(held);
      }
    }
  });

  it("a long stop whose start the output keeps repeating: held back, released on a miss, cut on a match", () => {
    const stop = "x".repeat(50_000) + "!";
    const m = new StopMatcher([stop]);
    let sent = 0;
    for (let i = 0; i < 20_000; i++) sent += m.push("xxx").emit.length;
    // all but the stop's start (50,000 characters) has gone out; the stop never completed
    expect(sent).toBe(60_000 - 50_000);
    // a character that no stop continues releases everything held
    expect(m.push("y").emit).toBe("x".repeat(50_000) + "y");
    for (let i = 0; i < 20_000; i++) m.push("xxx");
    // "!" completes the stop with the 50,000 held back: cut where it starts, nothing more goes out
    expect(m.push("!")).toEqual({ emit: "", stopped: true });
  });
});
