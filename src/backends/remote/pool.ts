// The replicas of one remote model and how a request picks one: least outstanding requests,
// with prefix affinity (affinity.ts) unless that replica is clearly busier than the least busy
// one; health checks while the model is loaded; a circuit breaker that stops sending to a
// replica after consecutive failures and lets one trial request through after a cooldown.
import type { UpstreamState } from "../backend.js";
import type { RemoteRouting } from "../../config.js";
import type { UpstreamAddress } from "../../registry/remote-host.js";
import { AffinityTable } from "./affinity.js";
import type { Dialect } from "./dialect.js";
import type { Upstream } from "./http.js";

/** Consecutive failures that open a replica's circuit, and how long it stays open. */
export const BREAKER_FAILURES = 3;
export const BREAKER_COOLDOWN_MS = 10_000;
/** Affinity yields to load when its replica has this many more requests than the least busy. */
const AFFINITY_SLACK = 4;

export interface Replica extends Upstream {
  index: number;
  address: UpstreamAddress;
  dialect: Dialect;
  outstanding: number;
  failures: number;
  /** Circuit open until then (ms since epoch); 0 = closed. */
  openUntil: number;
  /** A half-open trial request is in flight. */
  trial: boolean;
  /** The last health check failed. */
  unhealthy: boolean;
}

export class ReplicaPool {
  private readonly affinity = new AffinityTable();
  private next = 0;

  constructor(
    readonly replicas: Replica[],
    private readonly routing: RemoteRouting,
    private readonly now: () => number = Date.now,
  ) {}

  /** May take a request now: circuit closed, or open past its cooldown with no trial running. */
  private available(r: Replica): boolean {
    if (r.openUntil === 0) return !r.unhealthy;
    return r.openUntil <= this.now() && !r.trial;
  }

  /** The replica for a request (not one in `tried`); undefined when none can take it. */
  pick(keys: readonly string[], tried: ReadonlySet<number>): Replica | undefined {
    let candidates = this.replicas.filter((r) => !tried.has(r.index) && this.available(r));
    // Every replica looks down: try the untried ones anyway rather than refuse outright.
    if (candidates.length === 0) candidates = this.replicas.filter((r) => !tried.has(r.index) && r.openUntil <= this.now() && !r.trial);
    if (candidates.length === 0) return undefined;
    let chosen: Replica;
    if (this.routing === "round-robin") {
      chosen = candidates[this.next++ % candidates.length] as Replica;
    } else {
      const least = candidates.reduce((a, b) => (b.outstanding < a.outstanding ? b : a));
      chosen = least;
      if (this.routing === "affinity") {
        const hit = this.affinity.lookup(keys);
        const r = hit ? candidates.find((c) => c.index === hit.replica) : undefined;
        if (r && r.outstanding <= least.outstanding + AFFINITY_SLACK) chosen = r;
      }
    }
    if (chosen.openUntil !== 0) chosen.trial = true;
    return chosen;
  }

  /** The request went to `r` (it now holds these prefixes); call done() when it ends. */
  begin(r: Replica, keys: readonly string[]): () => void {
    r.outstanding++;
    this.affinity.record(keys, r.index);
    let ended = false;
    return () => {
      if (!ended) r.outstanding--;
      ended = true;
    };
  }

  succeeded(r: Replica): void {
    r.failures = 0;
    r.openUntil = 0;
    r.trial = false;
    r.unhealthy = false;
  }

  failed(r: Replica): void {
    r.failures++;
    r.trial = false;
    if (r.failures >= BREAKER_FAILURES) r.openUntil = this.now() + BREAKER_COOLDOWN_MS;
  }

  states(): UpstreamState[] {
    return this.replicas.map((r) => ({
      url: r.address.base,
      api: r.address.api,
      state: r.openUntil > this.now() ? "open" : r.unhealthy ? "unhealthy" : "healthy",
      outstanding: r.outstanding,
    }));
  }
}
