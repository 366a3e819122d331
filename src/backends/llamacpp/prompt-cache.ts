// The runner's prompt cache: snapshots of evaluated prompts, kept as sequence state files in the
// runner's private directory (page cache; never fsynced), within a byte budget, least recently
// used dropped first. A snapshot is taken while its prompt is still in the sequence, so later
// reuse never has to read a busy sequence's state: loading a snapshot into any slot is a single
// file read (~15 ms for 1,000 tokens of the 1B test model), where copying from a sequence that is
// decoding first waits for its step and then writes a file (sequence-states.ts).
// File names come from a counter, never from request input.
import { rm } from "node:fs/promises";
import path from "node:path";

/** How the cache reads and writes a sequence: node-llama-cpp in the runner, fakes in unit tests. */
export interface SnapshotIO<S> {
  /** The tokens whose KV state the sequence holds, in order. */
  tokensOf(seq: S): readonly number[];
  /** Writes the sequence's state to `file`; resolves with its size in bytes. */
  save(seq: S, file: string): Promise<number>;
  /** Replaces the sequence's state with the one in `file`. */
  load(seq: S, file: string): Promise<void>;
}

export interface Snapshot {
  readonly file: string;
  readonly tokens: readonly number[];
  readonly bytes: number;
}

interface Entry extends Snapshot {
  lastUsed: number;
  /** Loads in progress: the file is not removed under them. */
  pins: number;
  dropped: boolean;
}

/** Tokens `a` and `b` share from the start. */
export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class PromptCache<S> {
  private entries: Entry[] = [];
  private counter = 0;
  private clock = 0;

  constructor(
    /** The directory for the files (created by the caller, private to this runner). */
    private readonly dir: () => string,
    private readonly budgetBytes: number,
    private readonly io: SnapshotIO<S>,
  ) {}

  get size(): number {
    return this.entries.length;
  }

  get bytes(): number {
    return this.entries.reduce((sum, e) => sum + e.bytes, 0);
  }

  /** The snapshot sharing the longest prefix with `tokens`, and that prefix's length. */
  best(tokens: readonly number[]): { snapshot: Snapshot | undefined; common: number } {
    let snapshot: Entry | undefined;
    let common = 0;
    for (const e of this.entries) {
      const c = commonPrefix(e.tokens, tokens);
      if (c > common) {
        common = c;
        snapshot = e;
      }
    }
    return { snapshot, common };
  }

  /** The snapshots, most recently used (or saved) first. */
  recent(): Snapshot[] {
    return [...this.entries].sort((a, b) => b.lastUsed - a.lastUsed);
  }

  /** Whether a snapshot holds all of `tokens` but at most `slack` of their last ones. */
  covers(tokens: readonly number[], slack: number): boolean {
    return tokens.length === 0 || this.best(tokens).common >= tokens.length - slack;
  }

  /** Snapshots what `seq` holds. Snapshots it contains from their start are dropped (it serves
   *  every prompt they served); then the oldest go while the budget is exceeded. */
  async save(seq: S): Promise<Snapshot | undefined> {
    const tokens = [...this.io.tokensOf(seq)];
    if (tokens.length === 0) return undefined;
    const file = path.join(this.dir(), `snapshot-${++this.counter}.state`);
    let bytes: number;
    try {
      bytes = await this.io.save(seq, file);
    } catch (err) {
      await rm(file, { force: true });
      throw err;
    }
    if (bytes > this.budgetBytes) {
      await rm(file, { force: true });
      return undefined;
    }
    const entry: Entry = { file, tokens, bytes, lastUsed: ++this.clock, pins: 0, dropped: false };
    const contained = this.entries.filter((e) => commonPrefix(e.tokens, tokens) === e.tokens.length);
    this.entries.push(entry);
    await Promise.all(contained.map((e) => this.drop(e)));
    await this.evictOver(this.budgetBytes);
    return entry;
  }

  /**
   * Loads a snapshot into `seq`. A snapshot that fails to load is dropped (the caller then
   * evaluates the prompt itself); resolves with whether it loaded.
   */
  async load(snapshot: Snapshot, seq: S): Promise<boolean> {
    const entry = this.entries.find((e) => e === snapshot);
    if (!entry) return false;
    entry.lastUsed = ++this.clock;
    entry.pins++;
    try {
      await this.io.load(seq, entry.file);
      return true;
    } catch {
      await this.drop(entry);
      return false;
    } finally {
      entry.pins--;
      if (entry.dropped && entry.pins === 0) await rm(entry.file, { force: true });
    }
  }

  private async evictOver(budget: number): Promise<void> {
    const order = [...this.entries].sort((a, b) => a.lastUsed - b.lastUsed);
    let total = this.bytes;
    for (const e of order) {
      if (total <= budget) break;
      total -= e.bytes;
      await this.drop(e);
    }
  }

  private async drop(e: Entry): Promise<void> {
    this.entries = this.entries.filter((x) => x !== e);
    e.dropped = true;
    if (e.pins === 0) await rm(e.file, { force: true });
  }
}
