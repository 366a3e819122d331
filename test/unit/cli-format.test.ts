// Human formats, tables and the --verbose block, checked against the strings Ollama's own code and
// tests produce for the same data (format/*_test.go, cmd/cmd_test.go, api.Metrics.Summary).
// The `show` sections, progress and answer display are in cli-display.test.ts.
import { describe, expect, it } from "vitest";
import { formatGoDuration, parseGoDurationStrict } from "../../src/cli/duration.js";
import { formatSummary, goFixed, goFloatG, humanBytes, humanDuration, humanNumber, humanTime } from "../../src/cli/format.js";
import { formatListTable, formatPsTable, processorLabel } from "../../src/cli/model-tables.js";
import { renderTable, wrapString } from "../../src/cli/table.js";
import type { ListModel, ModelDetails, ProcessModel } from "../../src/api/types.js";

const details: ModelDetails = {
  parent_model: "",
  format: "gguf",
  family: "test",
  families: null,
  parameter_size: "7B",
  quantization_level: "FP16",
};

describe("humanBytes (format.HumanBytes)", () => {
  it.each([
    [0, "0 B"],
    [1, "1 B"],
    [999, "999 B"],
    [1000, "1 KB"],
    [1500, "1.5 KB"],
    [999999, "999 KB"],
    [1000000, "1 MB"],
    [1500000, "1.5 MB"],
    [999999999, "999 MB"],
    [1000000000, "1 GB"],
    [1500000000, "1.5 GB"],
    [999999999999, "999 GB"],
    [1000000000000, "1 TB"],
    [1500000000000, "1.5 TB"],
    [1999999999999, "2.0 TB"],
    [1234, "1.2 KB"],
    [1234567, "1.2 MB"],
    [1234567890, "1.2 GB"],
    [1024, "1.0 KB"],
    [3_825_819_519, "3.8 GB"],
    [986_000_000, "986 MB"],
    [140_000, "140 KB"],
    [1_250_000_000, "1.2 GB"], // an exact tie: Go rounds half to even
  ])("%d → %s", (n, want) => expect(humanBytes(n)).toBe(want));
});

describe("humanNumber (format.HumanNumber)", () => {
  it.each([
    [0, "0"],
    [999, "999"],
    [1000, "1K"],
    [1001, "1K"],
    [1000000, "1M"],
    [125000000, "125M"],
    [500500000, "500.50M"],
    [500550000, "500.55M"],
    [1000000000, "1B"],
    [2800000000, "2.8B"],
    [2850000000, "2.9B"],
    [1000000000000, "1000B"],
    [133_700_000, "133.70M"],
  ])("%d → %s", (n, want) => expect(humanNumber(n)).toBe(want));
});

describe("Go float printing", () => {
  it("rounds exact ties to even like fmt %.Nf", () => {
    expect(goFixed(0.125, 2)).toBe("0.12");
    expect(goFixed(0.375, 2)).toBe("0.38");
    expect(goFixed(2.5, 0)).toBe("2");
    expect(goFixed(3.5, 0)).toBe("4");
    expect(goFixed(12.125, 2)).toBe("12.12");
    expect(goFixed(2.675, 2)).toBe("2.67"); // 2.675 is below the tie in binary
    expect(goFixed(199.8769, 2)).toBe("199.88");
    expect(goFixed(-0.125, 2)).toBe("-0.12");
  });

  it("prints %g with the shortest digits", () => {
    expect(goFloatG(8e9)).toBe("8e+09");
    expect(goFloatG(1000)).toBe("1000");
    expect(goFloatG(11434)).toBe("11434");
    expect(goFloatG(0.6)).toBe("0.6");
    expect(goFloatG(1e-5)).toBe("1e-05");
    expect(goFloatG(0.0001)).toBe("0.0001");
    expect(goFloatG(123456)).toBe("123456");
    expect(goFloatG(1234567)).toBe("1.234567e+06");
    expect(goFloatG(3212749888)).toBe("3.212749888e+09");
    expect(goFloatG(1e21)).toBe("1e+21");
  });
});

describe("humanTime (format.HumanTime)", () => {
  const now = Date.parse("2025-06-01T12:00:00Z");
  const at = (ms: number) => new Date(now + ms).toISOString();
  it.each([
    [-48 * 3600e3, "2 days ago"],
    [48 * 3600e3, "2 days from now"],
    [800, "Less than a second from now"],
    [-1000, "1 second ago"],
    [-30_000, "30 seconds ago"],
    [-90_000, "About a minute ago"],
    [4 * 60e3 + 5000, "4 minutes from now"],
    [-3600e3, "About an hour ago"],
    [-24 * 3600e3, "24 hours ago"],
    [-10 * 86400e3, "10 days ago"],
    [-21 * 86400e3, "3 weeks ago"],
    [-90 * 86400e3, "3 months ago"],
    [-3 * 365 * 86400e3, "3 years ago"],
    [200 * 365 * 86400e3, "Forever"],
  ])("%d ms → %s", (delta, want) => expect(humanTime(at(delta), "", now)).toBe(want));

  it("uses the zero value for a missing or zero time", () => {
    expect(humanTime("0001-01-01T00:00:00Z", "Never", now)).toBe("Never");
    expect(humanTime(undefined, "never", now)).toBe("never");
    expect(humanTime("", "Never", now)).toBe("Never");
  });

  it("rounds hours as Go does", () => {
    expect(humanDuration(89.5 * 60e3)).toBe("About an hour"); // 1.49 h rounds to 1
    expect(humanDuration(47.6 * 3600e3)).toBe("2 days"); // rounds to 48 h
    expect(humanDuration(47.4 * 3600e3)).toBe("47 hours");
  });
});

describe("Go durations", () => {
  it.each([
    [0, "0s"],
    [1, "1ns"],
    [1100, "1.1µs"],
    [2_200_000, "2.2ms"],
    [29_500_000, "29.5ms"],
    [3_300_000_000, "3.3s"],
    [1_503_981_000, "1.503981s"],
    [4 * 60e9 + 5e9, "4m5s"],
    [4 * 60e9 + 5001e6, "4m5.001s"],
    [5 * 3600e9 + 6 * 60e9 + 7001e6, "5h6m7.001s"],
    [8 * 60e9 + 1, "8m0.000000001s"],
    [-1_500_000_000, "-1.5s"],
  ])("%d ns → %s", (ns, want) => expect(formatGoDuration(ns)).toBe(want));

  it("parses Go duration syntax", () => {
    expect(parseGoDurationStrict("5m")).toBe(300e9);
    expect(parseGoDurationStrict("1h30m")).toBe(5400e9);
    expect(parseGoDurationStrict("300ms")).toBe(300e6);
    expect(parseGoDurationStrict("1.5h")).toBe(5400e9);
    expect(parseGoDurationStrict("-1m")).toBe(-60e9);
    expect(parseGoDurationStrict("0")).toBe(0);
    expect(parseGoDurationStrict("2µs")).toBe(2000);
    expect(() => parseGoDurationStrict("300")).toThrow('time: missing unit in duration "300"');
    expect(() => parseGoDurationStrict("-1")).toThrow('time: missing unit in duration "-1"');
    expect(() => parseGoDurationStrict("5x")).toThrow('time: unknown unit "x" in duration "5x"');
    expect(() => parseGoDurationStrict("")).toThrow('time: invalid duration ""');
    expect(() => parseGoDurationStrict("m")).toThrow('time: invalid duration "m"');
  });
});

describe("--verbose summary (api.Metrics.Summary)", () => {
  it("prints every non-zero metric with padded labels", () => {
    const out = formatSummary({
      total_duration: 1_503_981_000,
      load_duration: 29_500_000,
      prompt_eval_count: 26,
      prompt_eval_duration: 130_079_000,
      eval_count: 97,
      eval_duration: 8_000_000_000,
    });
    expect(out).toBe(
      "total duration:       1.503981s\n" +
        "load duration:        29.5ms\n" +
        "prompt eval count:    26 token(s)\n" +
        "prompt eval duration: 130.079ms\n" +
        "prompt eval rate:     199.88 tokens/s\n" +
        "eval count:           97 token(s)\n" +
        "eval duration:        8s\n" +
        "eval rate:            12.12 tokens/s\n",
    );
  });

  it("leaves out zero and missing values", () => {
    expect(formatSummary({ eval_count: 3 })).toBe("eval count:           3 token(s)\n");
    expect(formatSummary({})).toBe("");
  });
});

describe("tables (tablewriter as Ollama configures it)", () => {
  it("renders `ollama list` exactly (cmd_test.go TestListHandler)", () => {
    const now = Date.now();
    const models: ListModel[] = [
      { name: "model1", model: "model1", digest: "sha256:abc123", size: 1024, modified_at: new Date(now - 24 * 3600e3).toISOString(), details },
      { name: "model2", model: "model2", digest: "sha256:def456", size: 2048, modified_at: new Date(now - 48 * 3600e3).toISOString(), details },
    ];
    expect(formatListTable(models, undefined, now)).toBe(
      "NAME      ID              SIZE      MODIFIED     \n" +
        "model1    sha256:abc12    1.0 KB    24 hours ago    \n" +
        "model2    sha256:def45    2.0 KB    2 days ago      \n",
    );
    expect(formatListTable(models, "MODEL1", now)).toBe(
      "NAME      ID              SIZE      MODIFIED     \n" + "model1    sha256:abc12    1.0 KB    24 hours ago    \n",
    );
  });

  it("renders only the header when there is nothing to list", () => {
    expect(formatListTable([], undefined)).toBe("NAME    ID    SIZE    MODIFIED \n");
  });

  it("renders `ollama ps` with processor split and expiry", () => {
    const now = Date.parse("2025-06-01T12:00:00Z");
    const ps: ProcessModel[] = [
      {
        name: "llama3.2:latest",
        model: "llama3.2:latest",
        size: 3_400_000_000,
        size_vram: 3_400_000_000,
        digest: "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
        details,
        expires_at: new Date(now + 4 * 60e3 + 30e3).toISOString(),
        context_length: 4096,
      },
      {
        name: "tiny:latest",
        model: "tiny:latest",
        size: 1_000,
        size_vram: 0,
        digest: "0123456789abcdef",
        details,
        expires_at: new Date(now - 1000).toISOString(),
        context_length: 2048,
      },
    ];
    expect(formatPsTable(ps, undefined, now)).toBe(
      "NAME               ID              SIZE      PROCESSOR    CONTEXT    UNTIL              \n" +
        "llama3.2:latest    a80c4f17acd5    3.4 GB    100% GPU     4096       4 minutes from now    \n" +
        "tiny:latest        0123456789ab    1 KB      100% CPU     2048       Stopping...           \n",
    );
    expect(processorLabel(100, 52)).toBe("48%/52% CPU/GPU");
    expect(processorLabel(100, 200)).toBe("Unknown");
  });

  it("wraps cells wider than the column limit with minimal raggedness", () => {
    expect(wrapString("aaa bb cc ddddd", 6)).toEqual(["aaa", "bb cc", "ddddd"]);
    expect(wrapString("averyveryverylongword", 5)).toEqual(["averyveryverylongword"]);
    const out = renderTable([["", "one two three four five six seven eight nine ten eleven"]]);
    // the column keeps the 30-column limit as its width; the short first cell is filled with "  "
    expect(out).toBe("    one two three four five six       \n" + "      seven eight nine ten eleven       \n");
  });
});

describe("embedding output (json.Marshal of []float32)", () => {
  it("prints each value as the shortest decimal of its float32", async () => {
    const { float32Json, formatEmbedding } = await import("../../src/cli/format.js");
    expect(float32Json(0.1)).toBe("0.1");
    expect(float32Json(0.32337818593707873)).toBe("0.32337818");
    expect(float32Json(-0.44266185926903734)).toBe("-0.44266185");
    expect(float32Json(1e-7)).toBe("1e-7");
    expect(float32Json(123456789)).toBe("123456790");
    expect(float32Json(1e21)).toBe("1e+21");
    expect(float32Json(0)).toBe("0");
    expect(float32Json(2)).toBe("2");
    expect(formatEmbedding([0.5, -0.25, 0.1])).toBe("[0.5,-0.25,0.1]");
    expect(formatEmbedding([])).toBe("[]");
  });
});
