// The test helper that reads scrapes must refuse what Prometheus refuses, or a broken /metrics
// could pass the metrics tests.
import { describe, expect, it } from "vitest";
import { parsePrometheusText, Scrape } from "../helpers/prometheus.js";

const HIST = `# HELP h_seconds A histogram.
# TYPE h_seconds histogram
h_seconds_bucket{le="0.1",kind="a"} 1
h_seconds_bucket{le="1",kind="a"} 2
h_seconds_bucket{le="+Inf",kind="a"} 3
h_seconds_sum{kind="a"} 4.5
h_seconds_count{kind="a"} 3
h_seconds_bucket{le="0.1",kind="b \\"q\\""} 0
h_seconds_bucket{le="1",kind="b \\"q\\""} 0
h_seconds_bucket{le="+Inf",kind="b \\"q\\""} 1
h_seconds_sum{kind="b \\"q\\""} 9
h_seconds_count{kind="b \\"q\\""} 1
# HELP c_total A counter.
# TYPE c_total counter
c_total{x="1"} 2
c_total{x="2"} 3e0
`;

describe("the Prometheus text reader of the tests", () => {
  it("reads labelled histograms and counters", () => {
    const s = new Scrape(HIST);
    expect(s.histogram("h_seconds", { kind: "a" })).toEqual({ count: 3, sum: 4.5, buckets: new Map([["0.1", 1], ["1", 2], ["+Inf", 3]]) });
    expect(s.histogram("h_seconds", { kind: 'b "q"' }).sum).toBe(9);
    expect(s.histogram("h_seconds").count).toBe(4);
    expect(s.value("c_total")).toBe(5);
    expect(s.value("c_total", { x: "2" })).toBe(3);
    expect(s.problems("")).toEqual([]);
  });

  it.each([
    ["a sample line without a value", "x_total{a=\"1\"}\n"],
    ["an unquoted label value", "x{a=1} 1\n"],
    ["a bad escape", 'x{a="\\t"} 1\n'],
    ["a bad value", "x 1.2.3\n"],
    ["a duplicate series", "x{a=\"1\"} 1\nx{a=\"1\"} 2\n"],
    ["TYPE after samples", "x 1\n# TYPE x gauge\n"],
    ["a family split in two", "x 1\ny 1\nx{a=\"2\"} 1\n"],
    ["a histogram without +Inf", '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ["+Inf different from _count", '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 2\n'],
    ["buckets that shrink", '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ["no final newline", "x 1"],
    ["a bad metric name", "1x 1\n"],
  ])("refuses %s", (_what, text) => {
    expect(() => parsePrometheusText(text)).toThrow();
  });

  it("lists naming problems", () => {
    const s = new Scrape("# HELP p_requests Requests.\n# TYPE p_requests counter\np_requests 1\n# TYPE p_latency_ms gauge\np_latency_ms 3\nq_other 1\n");
    expect(s.problems("p_")).toEqual(["p_requests: a counter not ending in _total", "p_latency_ms: no HELP", "p_latency_ms: not in base units", "q_other: not under p_"]);
  });
});
