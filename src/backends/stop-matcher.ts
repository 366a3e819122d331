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
  /** Per stop, its prefix function (KMP), and how much of its start the text so far ends with:
   *  each piece is matched in time linear in its own length, where looking again through the
   *  held-back text cost up to the square of a stop's length per token (a 20,000-character stop
   *  whose start the output repeated: 422 ms against 41 for three rounds; growing with the
   *  square, a stop of a megabyte would hold the runner for minutes). */
  private readonly borders: Int32Array[];
  private readonly matched: Int32Array;

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
    this.borders = this.stops.map(prefixFunction);
    this.matched = new Int32Array(this.stops.length);
  }

  push(text: string): StopStep {
    if (this.stops.length === 0) return { emit: text, stopped: false };
    const buf = this.held + text;
    // Every stop that ends in this piece (the held text holds none whole): the cut is where the
    // first of them starts.
    let cut = -1;
    let keep = 0;
    this.stops.forEach((stop, k) => {
      const border = this.borders[k]!;
      let m = this.matched[k]!;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (m === stop.length) m = border[m - 1]!;
        while (m > 0 && c !== stop.charCodeAt(m)) m = border[m - 1]!;
        if (c === stop.charCodeAt(m)) m++;
        if (m === stop.length) {
          const at = this.held.length + i + 1 - m;
          if (cut === -1 || at < cut) cut = at;
          break; // a later end of the same stop starts later
        }
      }
      this.matched[k] = m;
      if (m < stop.length && m > keep) keep = m;
    });
    if (cut !== -1) {
      this.reset();
      return { emit: buf.slice(0, cut), stopped: true };
    }
    // What may still be the start of a stop is held back.
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
    this.reset();
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
    this.reset();
    return rest;
  }

  private reset(): void {
    this.held = "";
    this.matched.fill(0);
  }
}

/** border[i]: the length of the longest proper prefix of s[0..i] that is also its suffix. */
function prefixFunction(s: string): Int32Array {
  const border = new Int32Array(s.length);
  for (let i = 1, k = 0; i < s.length; i++) {
    while (k > 0 && s.charCodeAt(i) !== s.charCodeAt(k)) k = border[k - 1]!;
    if (s.charCodeAt(i) === s.charCodeAt(k)) k++;
    border[i] = k;
  }
  return border;
}
