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
