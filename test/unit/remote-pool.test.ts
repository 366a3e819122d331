// Routing across replicas (backends/remote/pool.ts, affinity.ts) without any upstream: least
// outstanding requests, prefix affinity for a conversation and a shared system prompt, affinity
// yielding to load, round robin, and the circuit breaker's open / half-open / closed.
import { describe, expect, it } from "vitest";
import type { GenerateJob, JobMessage } from "../../src/backends/backend.js";
import { prefixKeys } from "../../src/backends/remote/affinity.js";
import type { Dialect } from "../../src/backends/remote/dialect.js";
import { BREAKER_COOLDOWN_MS, BREAKER_FAILURES, ReplicaPool, type Replica } from "../../src/backends/remote/pool.js";
import type { RemoteRouting } from "../../src/config.js";

function replicas(n: number): Replica[] {
  return Array.from({ length: n }, (_, index) => ({
    index,
    address: { base: `http://r${index}:8000/v1`, api: "openai", hostPort: `r${index}:8000`, hostname: `r${index}` },
    dialect: {} as Dialect,
    base: `http://r${index}:8000/v1`,
    label: `r${index}`,
    outstanding: 0,
    failures: 0,
    openUntil: 0,
    trial: false,
    unhealthy: false,
  }));
}

const sampling = { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, seed: -1, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 };
const chat = (messages: JobMessage[]): GenerateJob => ({ messages, sampling, numPredict: -1, stop: [], wantContext: false });
const pool = (n: number, routing: RemoteRouting = "affinity", now = () => 0) => new ReplicaPool(replicas(n), routing, now);
const none = new Set<number>();

describe("prefix keys", () => {
  it("a follow-up turn extends the keys of the turn before; a different system prompt shares none", () => {
    const t1 = prefixKeys(chat([{ role: "system", content: "S" }, { role: "user", content: "a" }]));
    const t2 = prefixKeys(chat([{ role: "system", content: "S" }, { role: "user", content: "a" }, { role: "assistant", content: "b" }, { role: "user", content: "c" }]));
    expect(t2.slice(0, 2)).toEqual(t1);
    const other = prefixKeys(chat([{ role: "system", content: "T" }, { role: "user", content: "a" }]));
    expect(other.some((k) => t1.includes(k))).toBe(false);
  });
  it("a raw prompt is keyed by 256-character blocks", () => {
    const k = prefixKeys({ prompt: "x".repeat(600), sampling, numPredict: -1, stop: [], wantContext: false });
    expect(k).toHaveLength(2);
  });
});

describe("routing", () => {
  it("least outstanding requests first", () => {
    const p = pool(3, "least");
    const ends = [0, 1, 2].map(() => {
      const r = p.pick([], none)!;
      return { r: r.index, end: p.begin(r, []) };
    });
    expect(ends.map((e) => e.r).sort()).toEqual([0, 1, 2]);
    ends[1]!.end();
    expect(p.pick([], none)?.index).toBe(1);
  });

  it("affinity: every turn of a conversation lands where its first turn went, while others spread", () => {
    const p = pool(2);
    const convs = ["A", "B", "C", "D"].map((s) => [{ role: "system", content: s }, { role: "user", content: "q1" }] as JobMessage[]);
    const home = convs.map((m) => {
      const keys = prefixKeys(chat(m));
      const r = p.pick(keys, none)!;
      p.begin(r, keys)(); // ends at once
      return r.index;
    });
    for (let turn = 2; turn < 5; turn++) {
      convs.forEach((m, i) => {
        m.push({ role: "assistant", content: `a${turn}` }, { role: "user", content: `q${turn}` });
        const keys = prefixKeys(chat(m));
        const r = p.pick(keys, none)!;
        expect(r.index).toBe(home[i]);
        p.begin(r, keys)();
      });
    }
  });

  it("affinity yields to a replica that is much less busy", () => {
    const p = pool(2);
    const keys = prefixKeys(chat([{ role: "user", content: "hot" }]));
    const first = p.pick(keys, none)!;
    p.begin(first, keys);
    for (let i = 0; i < 5; i++) p.begin(first, []); // that replica gets busy
    expect(p.pick(keys, none)?.index).not.toBe(first.index);
  });

  it("round robin alternates whatever the prefix", () => {
    const p = pool(2, "round-robin");
    const keys = prefixKeys(chat([{ role: "user", content: "x" }]));
    expect([0, 1, 2, 3].map(() => p.pick(keys, none)!.index)).toEqual([0, 1, 0, 1]);
  });
});

describe("circuit breaker", () => {
  it("opens after consecutive failures, lets one trial through after the cooldown, closes on success", () => {
    let now = 1_000;
    const p = pool(2, "least", () => now);
    const r0 = p.replicas[0]!;
    for (let i = 0; i < BREAKER_FAILURES; i++) p.failed(r0);
    expect(p.states()[0]?.state).toBe("open");
    for (let i = 0; i < 3; i++) expect(p.pick([], none)?.index).toBe(1);
    now += BREAKER_COOLDOWN_MS;
    const trial = p.pick([], new Set([1]));
    expect(trial?.index).toBe(0); // half-open: one trial
    expect(p.pick([], new Set([1]))).toBeUndefined(); // no second trial while it runs
    p.succeeded(r0);
    expect(p.states()[0]?.state).toBe("healthy");
  });

  it("a request tries every replica once (failover), then gives up", () => {
    const p = pool(2);
    const tried = new Set<number>();
    tried.add(p.pick([], tried)!.index);
    tried.add(p.pick([], tried)!.index);
    expect(p.pick([], tried)).toBeUndefined();
  });
});
