// Ollama `stop` semantics on the accumulated text: the output ends before the first stop string,
// the stop string itself is never emitted, and text that may be the start of a stop is held back
// until it is known not to be. Engine-side triggers miss stops split across tokens on SPM vocabs.

export interface StopStep {
  /** Text that is safe to send to the client now. */
  emit: string;
  /** True once a stop string matched; everything after it is discarded. */
  stopped: boolean;
}

export class StopMatcher {
  private held = "";
  private readonly stops: string[];

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  push(text: string): StopStep {
    if (this.stops.length === 0) return { emit: text, stopped: false };
    const buf = this.held + text;
    const cut = this.firstStop(buf);
    if (cut !== -1) {
      this.held = "";
      return { emit: buf.slice(0, cut), stopped: true };
    }
    const keep = this.partialSuffixLength(buf);
    this.held = buf.slice(buf.length - keep);
    return { emit: buf.slice(0, buf.length - keep), stopped: false };
  }

  /**
   * A control token's text (a turn marker such as `<|start_header_id|>`, which the output never
   * shows): it ends the output when it completes a stop string, as its text does in Ollama, whose
   * stop parameters list a family's turn tokens; otherwise it is dropped. What was held back
   * before it is released (or cut at the stop).
   */
  pushControl(text: string): StopStep {
    const held = this.held;
    this.held = "";
    const cut = this.firstStop(held + text);
    if (cut === -1) return { emit: held, stopped: false };
    return { emit: held.slice(0, cut), stopped: true };
  }

  /** Where the first stop string in buf begins, or -1. */
  private firstStop(buf: string): number {
    let cut = -1;
    for (const stop of this.stops) {
      const i = buf.indexOf(stop);
      if (i !== -1 && (cut === -1 || i < cut)) cut = i;
    }
    return cut;
  }

  /** Text held back at the end of generation is real output. */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }

  /** Longest suffix of buf that is a proper prefix of some stop string. */
  private partialSuffixLength(buf: string): number {
    let best = 0;
    for (const stop of this.stops) {
      const max = Math.min(stop.length - 1, buf.length);
      for (let n = max; n > best; n--) {
        if (buf.endsWith(stop.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
