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
