// The bench's cases: each measures one thing through the daemon and, where there is one, on the
// engine directly, and returns rows for the summary table.

export interface CaseContext {
  /** Rounds of each measurement (sides alternate within a round). */
  rounds: number;
  /** Short prompts and generations: checks that the case runs, measures little. */
  quick: boolean;
  /** The model every case runs (the 1B-shaped Q4_0 test model unless --model). */
  modelPath: string;
  /** A second model file, for model switches (made on first use). */
  model2Path: () => Promise<string>;
  /** Busy processes in the busy-machine case. */
  busy: number;
  /** Prompt sizes of the engine case. */
  promptTokens: number[];
  log: (line: string) => void;
}

/** One figure: daemon and direct values where both exist, `value` the ratio or difference. */
export interface Row {
  figure: string;
  daemon?: number;
  direct?: number;
  value?: number;
  target?: string;
  pass?: boolean;
  /** Cores' worth of CPU other processes used meanwhile (median of the runs). */
  foreign?: number;
  note?: string;
}

export interface BenchCase {
  name: string;
  what: string;
  run(ctx: CaseContext): Promise<Row[]>;
}
