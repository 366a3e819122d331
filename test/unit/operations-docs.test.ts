// docs/operations.md and the Grafana dashboard name only metrics the daemon has, and the docs'
// table lists every one of them: the three cannot drift apart.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PrometheusMetrics } from "../../src/daemon/metrics/prometheus.js";
import { REPO } from "../helpers/daemon.js";
import { Scrape } from "../helpers/prometheus.js";

async function families(): Promise<string[]> {
  const s = new Scrape(await new PrometheusMetrics("0").render());
  return [...s.families.keys()].filter((n) => n.startsWith("ollamats_")).sort();
}

const base = (name: string) => name.replace(/_(bucket|sum|count)$/, "");

describe("the operations docs", () => {
  it("list every ollamats_ metric in their table, and no other", async () => {
    const doc = readFileSync(path.join(REPO, "docs/operations.md"), "utf8");
    const table = [...doc.matchAll(/^\| `(ollamats_\w+)` \|/gm)].map((m) => m[1] as string).sort();
    expect(table).toEqual(await families());
  });

  it("have a dashboard whose queries use only metrics the daemon has", async () => {
    const dash = JSON.parse(readFileSync(path.join(REPO, "docs/grafana-dashboard.json"), "utf8")) as { panels: { targets?: { expr: string }[] }[] };
    const used = new Set(dash.panels.flatMap((p) => p.targets ?? []).flatMap((t) => [...t.expr.matchAll(/\b(ollamats_\w+|nodejs_\w+|process_\w+)/g)].map((m) => base(m[1] as string))));
    const scrape = new Scrape(await new PrometheusMetrics("0").render());
    const unknown = [...used].filter((n) => !scrape.families.has(n));
    expect(unknown).toEqual([]);
    expect(used.size).toBeGreaterThan(20);
  });
});
