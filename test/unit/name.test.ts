import { describe, expect, it } from "vitest";
import {
  digestFileName,
  displayName,
  fullName,
  manifestPathParts,
  nameFromPathParts,
  parseDigest,
  parseModelName,
  sameName,
  type ModelName,
} from "../../src/registry/name.js";

const n = (host: string, namespace: string, model: string, tag: string): ModelName => ({ host, namespace, model, tag });

describe("parseModelName", () => {
  const ok: Array<[string, ModelName]> = [
    ["llama3.2", n("registry.ollama.ai", "library", "llama3.2", "latest")],
    ["llama3.2:1b", n("registry.ollama.ai", "library", "llama3.2", "1b")],
    ["user/model", n("registry.ollama.ai", "user", "model", "latest")],
    ["user/model:v1.0", n("registry.ollama.ai", "user", "model", "v1.0")],
    ["example.com/ns/m:tag", n("example.com", "ns", "m", "tag")],
    ["localhost:5000/ns/m", n("localhost:5000", "ns", "m", "latest")],
    ["localhost:5000/ns/m:v1", n("localhost:5000", "ns", "m", "v1")],
    ["hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", n("hf.co", "bartowski", "Llama-3.2-1B-Instruct-GGUF", "Q4_K_M")],
    ["_under/_score:_x", n("registry.ollama.ai", "_under", "_score", "_x")],
    ["Mixed/Case:Tag", n("registry.ollama.ai", "Mixed", "Case", "Tag")],
    ["a".repeat(80), n("registry.ollama.ai", "library", "a".repeat(80), "latest")],
    [`${"h".repeat(350)}/ns/m`, n("h".repeat(350), "ns", "m", "latest")],
  ];
  for (const [input, want] of ok) {
    it(`parses ${input.length > 60 ? `${input.slice(0, 20)}…` : input}`, () => {
      expect(parseModelName(input)).toEqual(want);
    });
  }

  it("keeps an explicit scheme", () => {
    expect(parseModelName("http://localhost:5000/ns/m:t")).toEqual({ scheme: "http", ...n("localhost:5000", "ns", "m", "t") });
    expect(parseModelName("https://example.com/ns/m")).toEqual({ scheme: "https", ...n("example.com", "ns", "m", "latest") });
    expect(parseModelName("ftp://example.com/ns/m")).toBeNull();
  });

  const invalid = [
    "",
    "has space",
    "a/",
    "/a",
    "a:",
    ":tag",
    "a//b",
    "ns/",
    "a".repeat(81),
    "m:" + "t".repeat(81),
    "ns.dot/model",
    "host/ns.dot/model",
    "..",
    "../etc/passwd",
    "ns/..",
    "ns/../m",
    "./m",
    "m:..",
    "m:.hidden",
    "-leading",
    "ns/-m",
    "a/b/c/d",
    "a\\b",
    "m\0x",
    "m@sha256:" + "a".repeat(64),
    "m:tag@sha256:" + "a".repeat(64),
    "m:1:2",
    "h/ns:1/m",
    "host:5000/m", // a port needs a namespace after it: "host:5000" would be the namespace
    "ünïcode",
    `${"h".repeat(351)}/ns/m`,
  ];
  for (const input of invalid) {
    it(`rejects ${JSON.stringify(input.length > 40 ? `${input.slice(0, 20)}…` : input)}`, () => {
      expect(parseModelName(input)).toBeNull();
    });
  }
});

describe("display forms", () => {
  it("displayName is the shortest form, tag always shown", () => {
    expect(displayName(parseModelName("llama3.2")!)).toBe("llama3.2:latest");
    expect(displayName(parseModelName("user/m")!)).toBe("user/m:latest");
    expect(displayName(parseModelName("example.com/ns/m:tag")!)).toBe("example.com/ns/m:tag");
    expect(displayName(parseModelName("example.com/library/m")!)).toBe("example.com/library/m:latest");
    expect(displayName(parseModelName("REGISTRY.OLLAMA.AI/Library/m:t")!)).toBe("m:t");
  });
  it("fullName is host/namespace/model:tag", () => {
    expect(fullName(parseModelName("llama3.2")!)).toBe("registry.ollama.ai/library/llama3.2:latest");
    expect(fullName(parseModelName("localhost:5000/ns/m:v1")!)).toBe("localhost:5000/ns/m:v1");
  });
  it("sameName compares each part case-insensitively", () => {
    expect(sameName(parseModelName("Llama3.2:Latest")!, parseModelName("llama3.2")!)).toBe(true);
    expect(sameName(parseModelName("user/m")!, parseModelName("USER/M:LATEST")!)).toBe(true);
    expect(sameName(parseModelName("user/m")!, parseModelName("other/m")!)).toBe(false);
    expect(sameName(parseModelName("m:a")!, parseModelName("m:b")!)).toBe(false);
  });
});

describe("manifestPathParts", () => {
  it("returns the four on-disk components; a host port keeps its colon", () => {
    expect(manifestPathParts(parseModelName("llama3.2")!)).toEqual(["registry.ollama.ai", "library", "llama3.2", "latest"]);
    expect(manifestPathParts(parseModelName("localhost:5000/ns/m:v1")!)).toEqual(["localhost:5000", "ns", "m", "v1"]);
  });

  const escapes: ModelName[] = [
    n("..", "library", "m", "latest"),
    n("registry.ollama.ai", "..", "m", "latest"),
    n("registry.ollama.ai", "library", "..", "latest"),
    n("registry.ollama.ai", "library", "m", ".."),
    n("registry.ollama.ai", "library", "m/../../x", "latest"),
    n("registry.ollama.ai", "a/b", "m", "latest"),
    n("registry.ollama.ai", "library", "m", "a\\b"),
    n("registry.ollama.ai", "library", "m", "t\0"),
    n("/etc", "library", "m", "latest"),
    n("registry.ollama.ai", "library", "", "latest"),
    n("registry.ollama.ai", "ns.x", "m", "latest"),
    n("registry.ollama.ai", "library", "m", "a:b"),
  ];
  for (const name of escapes) {
    it(`refuses ${JSON.stringify(name)}`, () => {
      expect(() => manifestPathParts(name)).toThrow(/invalid model name/);
    });
  }

  it("nameFromPathParts validates on-disk components", () => {
    expect(nameFromPathParts("localhost:5000", "ns", "m", "v1")).toEqual(n("localhost:5000", "ns", "m", "v1"));
    expect(nameFromPathParts("registry.ollama.ai", "library", "m", ".latest.tmp-1")).toBeNull();
  });
});

describe("digests", () => {
  const hex = "ab".repeat(32);
  it("parseDigest accepts sha256: and sha256- forms, canonicalised to lower case", () => {
    expect(parseDigest(`sha256:${hex}`)).toBe(`sha256:${hex}`);
    expect(parseDigest(`sha256-${hex}`)).toBe(`sha256:${hex}`);
    expect(parseDigest(`sha256:${hex.toUpperCase()}`)).toBe(`sha256:${hex}`);
  });
  const bad = [
    "",
    hex,
    `sha256:${hex.slice(2)}`,
    `sha256:${hex}0`,
    `sha512:${hex}`,
    `SHA256:${hex}`,
    `sha256:${"g".repeat(64)}`,
    "sha256:../../etc",
    `sha256:${hex}/../x`,
    ` sha256:${hex}`,
  ];
  for (const d of bad) {
    it(`parseDigest rejects ${JSON.stringify(d.slice(0, 30))}`, () => {
      expect(parseDigest(d)).toBeNull();
      expect(() => digestFileName(d)).toThrow(/invalid digest format/);
    });
  }
  it("digestFileName uses a dash", () => {
    expect(digestFileName(`sha256:${hex}`)).toBe(`sha256-${hex}`);
    expect(digestFileName(`sha256-${hex.toUpperCase()}`)).toBe(`sha256-${hex}`);
  });
});
