// Where a request's evaluated prompt prefix comes from, beyond its own slot's cache:
// - a snapshot in the prompt cache (prompt-cache.ts): one file load;
// - another slot, busy or not: its state copied through a file (sequence-states.ts), after the
//   busy one's step in flight;
// and what a prompt leaves behind for later requests:
// - a snapshot of the slot when a request is done, if enough of what it holds is in no snapshot
//   yet (at least SNAPSHOT_MIN_TOKENS and a quarter of it, so a growing conversation is written
//   a bounded number of times over): no later request then waits for a busy slot's state to be
//   written, and a conversation whose slot was given to another prompt (a title request between
//   two turns) loads it back;
// - for a prefix that was shared (reused by a request that went on differently from what the
//   slot held after it: a system prompt, a document asked about twice; not a conversation going
//   on, which is nobody else's), a copy in one idle slot, so the next request with it that arrives
//   while this one decodes finds it in its own slot. Slots whose cache is short or already a
//   snapshot are chosen first; any other is snapshotted before it is overwritten: no conversation
//   loses its cache for it.
// - when the runner is idle and a long prefix whose slot was given to short prompts is in no slot,
//   its snapshot loaded back into one of those slots ahead of the next request (restoreAhead):
//   a conversation or document interrupted by a burst of short requests (titles, completions)
//   then pays no load on its next turn. One slot is always left free for a newcomer, and a request
//   that arrives during the load and wants the prefix waits for it and moves into that slot.
// A snapshot nothing waits for is written 50 ms after the answer, unless a follow-up that
// continues the slot comes first (SNAPSHOT_DELAY_MS).
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { copySequenceState, MIN_COPY_GAIN_TOKENS } from "./sequence-states.js";
import { commonPrefix, type PromptCache } from "./prompt-cache.js";
import type { SlotPool } from "./slots.js";
import type { StepGate } from "./step-gate.js";

/** A slot is snapshotted when at least this many of its tokens (and a quarter of them) are in no
 *  snapshot; a prefix this long that was reused is copied ahead into an idle slot. */
export const SNAPSHOT_MIN_TOKENS = 256;
/** A snapshot that is not needed at once waits this long for a follow-up that continues the
 *  slot (a chat's next turn, sent the moment the answer is complete): that one goes first, and
 *  the slot is considered again when it is done. */
const SNAPSHOT_DELAY_MS = 50;
/** Prompt tokens left after a copy or load that the other sequences wait for. */
const HOLD_FOR_PROMPT_TOKENS = 32;

/** Where a request's reused prefix came from: its slot's own cache, a snapshot, another slot, or
 *  a snapshot loaded back into an idle slot before the request came (restoreAhead). */
export type PrefixSource = "own" | "snapshot" | "slot" | "restored";

/** Tokens of the slot's cache a prompt can keep: the score of a slot, and `cachedTokens`. */
export function reusable(seq: LlamaContextSequence, tokens: readonly Token[]): number {
  if (tokens.length === 0) return 0;
  return Math.min(seq.compareContextTokens(tokens as Token[]).firstDifferentIndex, tokens.length - 1);
}

export class PrefixReuse {
  private readonly background = new Set<Promise<void>>();
  /** Snapshots waiting out SNAPSHOT_DELAY_MS, by slot: start now, or drop. */
  private readonly delayed = new Map<LlamaContextSequence, { start: () => void; drop: () => void }>();
  /** A restore ahead in progress (its tokens once its snapshot is chosen), and when it is done. */
  private restoring: { tokens: readonly Token[]; done: Promise<void> } | undefined;
  /** Slots given a prefix by restoreAhead that no request has taken since. */
  private readonly restored = new WeakSet<LlamaContextSequence>();

  constructor(
    /** Every slot, in sequence id order. */
    private readonly seqs: readonly LlamaContextSequence[],
    private readonly slots: SlotPool<LlamaContextSequence>,
    private readonly gate: StepGate,
    private readonly cache: PromptCache<LlamaContextSequence>,
    private readonly scratchDir: () => string,
    /** Reports a failure that only costs reuse (the runner formats the error). */
    private readonly warn: (what: string, err: unknown) => void,
    /** Whether another request's prefix may be copied from this slot now (speculative.ts: a
     *  busy slot with a token predictor may hold proposals past its tokens). */
    private readonly canDonate: (seq: LlamaContextSequence) => boolean = () => true,
  ) {}

  /**
   * Gives `seq` the longest prefix of `tokens` that a snapshot or another slot holds, when that
   * is much longer than its own. While others decode, they are stopped at the lockstep gate for
   * it; if little of the prompt is left to evaluate (also without a copy), they stay stopped
   * until this request has its first token: one step for them, instead of this request waiting
   * for theirs and then sharing a slower one with them. Returns where the prefix came from and
   * the function that lets the others go on (also safe to call when nothing was held), and the
   * slot the request runs in: `taken`, or an idle one restoreAhead has just given its prefix to
   * (`taken` is then back in the pool).
   */
  async adopt(taken: LlamaContextSequence, tokens: readonly Token[]): Promise<{ seq: LlamaContextSequence; from: PrefixSource; release: () => void }> {
    let seq = taken;
    // A delayed snapshot of this slot is dropped if this request keeps (nearly) all the slot
    // holds, and written first if it overwrites it. Other slots' delayed snapshots stay on their
    // timers: this request waits for none of them (a 1,000-token one takes ~75 ms to write); if
    // one of those slots holds its prefix, it is copied from the slot, at the same cost as
    // writing the snapshot and loading it. Work in progress (snapshots, copies to an idle slot)
    // is waited for: it may be what this request needs.
    // (Nothing in the background changes this slot's tokens: this request has taken it.)
    let own = reusable(seq, tokens);
    if (own >= seq.nextTokenIndex - MIN_COPY_GAIN_TOKENS) this.delayed.get(seq)?.drop();
    else this.delayed.get(seq)?.start();
    await this.settle();
    // A prefix being loaded back into an idle slot is waited for only by a request that wants it.
    const restoring = this.restoring;
    if (restoring && commonPrefix(restoring.tokens, tokens) >= own + MIN_COPY_GAIN_TOKENS) await restoring.done;
    const moved = this.moveToRestored(seq, tokens, own);
    if (moved) {
      seq = moved;
      own = reusable(seq, tokens);
    }
    // Taken by acquire or moved to: either way its prefix came from a restore ahead.
    const restored = this.restored.delete(seq) && own >= MIN_COPY_GAIN_TOKENS;
    const mine = seq;
    const { seq: donor, common: fromSlot } = this.longest(tokens, own + MIN_COPY_GAIN_TOKENS - 1, (s) => s !== mine && this.canDonate(s));
    const { snapshot, common } = this.cache.best(tokens);
    const fromSnapshot = Math.min(common, tokens.length - 1);
    // A snapshot is one file load; a slot is a save and a load. A snapshot a little shorter wins.
    const useSnapshot = snapshot !== undefined && fromSnapshot >= own + MIN_COPY_GAIN_TOKENS && fromSnapshot + MIN_COPY_GAIN_TOKENS > fromSlot;
    const from: PrefixSource = useSnapshot ? "snapshot" : donor ? "slot" : restored ? "restored" : "own";
    const left = tokens.length - (useSnapshot ? fromSnapshot : donor ? fromSlot : own);
    const none = (): void => undefined;
    if ((from === "own" || from === "restored") && (this.gate.size === 0 || left > HOLD_FOR_PROMPT_TOKENS)) return { seq, from, release: none };
    const release = this.gate.size > 0 ? await this.gate.hold() : none;
    try {
      if (useSnapshot) {
        if (!(await this.cache.load(snapshot, seq))) throw new Error("the snapshot could not be loaded");
      } else if (donor) {
        await copySequenceState(donor, seq, this.scratchDir());
      }
    } catch (err) {
      // The prompt is then evaluated in full: slower, never wrong.
      this.warn("prefix copy failed", err);
      await seq.clearHistory().catch(() => undefined);
      release();
      return { seq, from: "own", release: none };
    }
    if (tokens.length - reusable(seq, tokens) > HOLD_FOR_PROMPT_TOKENS) {
      release();
      return { seq, from, release: none };
    }
    return { seq, from, release };
  }

  /** An idle slot restoreAhead gave a prefix of `tokens` that gains at least MIN_COPY_GAIN_TOKENS
   *  over `taken`'s own, swapped for `taken` in the pool; undefined if there is none. */
  private moveToRestored(taken: LlamaContextSequence, tokens: readonly Token[], own: number): LlamaContextSequence | undefined {
    const { seq } = this.longest(tokens, own + MIN_COPY_GAIN_TOKENS - 1, (s) => s !== taken && this.restored.has(s) && !this.slots.isBusy(s));
    return seq && this.slots.swap(taken, seq) ? seq : undefined;
  }

  /** The slot `eligible` allows that holds the longest prefix of `tokens`, if it is longer than
   *  `above`; `common` is that prefix's length, else `above`. */
  private longest(tokens: readonly Token[], above: number, eligible: (s: LlamaContextSequence) => boolean): { seq: LlamaContextSequence | undefined; common: number } {
    let seq: LlamaContextSequence | undefined;
    let common = above;
    for (const s of this.seqs) {
      if (!eligible(s)) continue;
      const r = reusable(s, tokens);
      if (r > common) {
        common = r;
        seq = s;
      }
    }
    return { seq, common };
  }

  /**
   * When a request is done with `seq` (released to the pool just before, so a follow-up can take
   * it at once; anything that uses the slot waits for this in adopt): snapshot what the slot
   * holds if enough of it is new, and copy a shared prefix into an idle slot (`reused` of the
   * `held` tokens the slot had when the request started). Both run in the background, after the
   * answer is complete, so no stream's tokens wait for them.
   */
  afterGeneration(seq: LlamaContextSequence, tokens: readonly Token[], prefix: { reused: number; held: number }): void {
    const holds = seq.contextTokens;
    const uncovered = holds.length - this.cache.best(holds).common;
    const shared = prefix.reused >= SNAPSHOT_MIN_TOKENS && prefix.held > prefix.reused;
    if (uncovered >= Math.max(SNAPSHOT_MIN_TOKENS, holds.length / 4)) {
      // A shared prefix is written at once, for the copy ahead below.
      if (shared) this.snapshot(seq);
      else this.delay(seq);
    }
    if (shared) this.copyAhead(tokens, prefix.reused);
    this.restoreAhead();
  }

  /** Writes the delayed snapshots now; resolves once no snapshot or copy is being written. */
  async flush(): Promise<void> {
    for (const d of [...this.delayed.values()]) d.start();
    await this.settle();
  }

  private async settle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  /** Waits for the snapshot and copy work and for a restore ahead (before the context is disposed). */
  async idle(): Promise<void> {
    await this.flush();
    while (this.restoring) await this.restoring.done;
  }

  /**
   * Once every slot is idle: the most recently used snapshot that no slot holds is loaded back
   * into an idle slot whose cache costs little to lose (fewer than SNAPSHOT_MIN_TOKENS of its
   * tokens in no snapshot: short prompts, which are never snapshotted, or a cache a snapshot
   * holds) and is at least SNAPSHOT_MIN_TOKENS shorter. Never with a single slot: a newcomer
   * always finds one free (restoring takes its slot for the load). After the snapshot and copy
   * work in progress, which may change what the slots and snapshots hold.
   */
  private restoreAhead(): void {
    if (this.restoring || this.seqs.length < 2 || this.slots.idle < this.seqs.length) return;
    const restoring: { tokens: readonly Token[]; done: Promise<void> } = { tokens: [], done: Promise.resolve() };
    restoring.done = this.afterPending()
      .then(() => this.restoreOne(restoring))
      .catch((err: unknown) => this.warn("restoring a prefix into an idle slot failed", err))
      .finally(() => {
        this.restoring = undefined;
      });
    this.restoring = restoring;
  }

  private async restoreOne(restoring: { tokens: readonly Token[] }): Promise<void> {
    if (this.slots.idle < this.seqs.length || this.slots.queued > 0) return;
    const held = (t: readonly Token[]) => this.seqs.some((s) => commonPrefix(s.contextTokens, t) >= t.length - MIN_COPY_GAIN_TOKENS);
    const snapshot = this.cache.recent().find((e) => !held(e.tokens as Token[]));
    if (!snapshot) return;
    const cheap = (s: LlamaContextSequence) => {
      const t = s.contextTokens;
      return t.length - this.cache.best(t).common < SNAPSHOT_MIN_TOKENS && t.length + SNAPSHOT_MIN_TOKENS <= snapshot.tokens.length;
    };
    const target = this.slots.claim((free) => free.filter(cheap).sort((a, b) => a.nextTokenIndex - b.nextTokenIndex)[0]);
    if (!target) return;
    restoring.tokens = snapshot.tokens as Token[];
    try {
      if (await this.cache.load(snapshot, target)) this.restored.add(target);
      else await target.clearHistory();
    } catch (err) {
      await target.clearHistory().catch(() => undefined);
      throw err;
    } finally {
      this.slots.release(target);
    }
  }

  /** Started now, so it takes the slot's locks before whatever comes next for the slot. */
  private snapshot(seq: LlamaContextSequence): void {
    this.delayed.get(seq)?.drop();
    this.track(this.cache.save(seq).then(() => undefined, (err: unknown) => this.warn("prompt snapshot failed", err)));
  }

  private delay(seq: LlamaContextSequence): void {
    this.delayed.get(seq)?.drop();
    const timer = setTimeout(() => entry.start(), SNAPSHOT_DELAY_MS);
    const entry = {
      start: () => {
        entry.drop();
        this.snapshot(seq);
      },
      drop: () => {
        clearTimeout(timer);
        if (this.delayed.get(seq) === entry) this.delayed.delete(seq);
      },
    };
    this.delayed.set(seq, entry);
  }

  /**
   * Copies the shared prefix of `tokens` (`reused` tokens, whose snapshot is being written) into
   * one idle slot that does not hold it. The slot is taken at once, so a request that arrives
   * meanwhile is given another one (and waits for this copy in adopt).
   */
  private copyAhead(tokens: readonly Token[], reused: number): void {
    const kept = (s: LlamaContextSequence) => s.nextTokenIndex < MIN_COPY_GAIN_TOKENS || this.cache.covers(s.contextTokens, MIN_COPY_GAIN_TOKENS);
    const target = this.slots.claim((free) => {
      const candidates = free.filter((s) => reusable(s, tokens) < reused - MIN_COPY_GAIN_TOKENS);
      // Slots whose cache is short or already a snapshot first, then the shortest.
      return candidates.sort((a, b) => Number(kept(b)) - Number(kept(a)) || a.nextTokenIndex - b.nextTokenIndex)[0];
    });
    if (!target) return;
    this.restored.delete(target);
    this.delayed.get(target)?.drop(); // written below if it needs to be
    const written = this.afterPending();
    this.track(
      written.then(async () => {
        try {
          const { snapshot, common } = this.cache.best(tokens);
          if (!snapshot || common < reused - MIN_COPY_GAIN_TOKENS) return;
          // What the slot held stays reusable: as a snapshot (the cache's budget decides how
          // long). If that cannot be written, the slot is left as it is.
          if (!kept(target) && !(await this.cache.save(target).catch(() => undefined))) return;
          if (!(await this.cache.load(snapshot, target))) await target.clearHistory();
        } catch (err) {
          this.warn("prefix copy to an idle slot failed", err);
          await target.clearHistory().catch(() => undefined);
        } finally {
          this.slots.release(target);
        }
      }),
    );
  }

  /** Resolves when what is being written now is written (not what is started meanwhile). */
  private async afterPending(): Promise<void> {
    await Promise.all([...this.background]);
  }

  private track(p: Promise<void>): void {
    const tracked = p.finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }
}
