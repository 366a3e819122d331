// Evaluated prompt prefixes outlive the slot and the runner that computed them:
// - across slots: a request whose prefix was evaluated in another sequence (busy, or not the
//   one it was given) gets that sequence's KV state copied into its own, instead of evaluating
//   the prefix again (seconds for 1,000 tokens on a CPU; the copy is tens of milliseconds);
// - across unloads: when a model is switched out, each slot's state is written to the daemon's
//   state directory, and the next runner of the same model with the same cache shape loads it
//   back, so a follow-up after the switch starts where it left off.
// node-llama-cpp offers no in-memory sequence copy, only its state files, so both go through
// files (page cache; nothing is fsynced). A state file is only ever loaded into a context with
// the same fingerprint: same model file, adapters, context size, KV types and flash attention.
import { createHash } from "node:crypto";
import { readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { LoadOptions } from "./protocol.js";

/** A copy pays only for a prefix this much longer than what the slot already holds. */
export const MIN_COPY_GAIN_TOKENS = 64;
/** Shorter caches are not worth a file when the model is unloaded. */
export const MIN_SAVED_TOKENS = 32;

/** What a state file is valid for. Any change of these makes it a different fingerprint. */
export async function stateFingerprint(modelPath: string, opts: LoadOptions, contextSize: number): Promise<string> {
  const { size, mtimeMs } = await stat(modelPath);
  const adapters = await Promise.all(opts.adapters.map(async (a) => ({ a, size: (await stat(a)).size })));
  const identity = {
    v: 1,
    model: path.resolve(modelPath),
    size,
    mtimeMs,
    adapters,
    contextSize,
    kvK: opts.kvCacheTypeK,
    kvV: opts.kvCacheTypeV,
    fa: opts.flashAttention ?? null,
    slots: opts.slots,
  };
  return createHash("sha256").update(JSON.stringify(identity)).digest("hex").slice(0, 32);
}

let copyCounter = 0;

/** Copies `from`'s evaluated tokens and KV state into `to` (which loses what it held). */
export async function copySequenceState(from: LlamaContextSequence, to: LlamaContextSequence, scratchDir: string): Promise<void> {
  const file = path.join(scratchDir, `copy-${process.pid}-${++copyCounter}.state`);
  try {
    await from.saveStateToFile(file);
    await to.loadStateFromFile(file, { acceptRisk: true });
  } finally {
    await rm(file, { force: true });
  }
}

function slotFile(dir: string, fingerprint: string, slot: number): string {
  return path.join(dir, `${fingerprint}-${slot}.state`);
}

/**
 * Writes the state of each slot that holds at least MIN_SAVED_TOKENS, most tokens first, while
 * the total stays within budgetBytes. Failures only cost the reuse, never the unload.
 */
export async function saveSlotStates(
  seqs: readonly LlamaContextSequence[],
  dir: string,
  fingerprint: string,
  budgetBytes: number,
): Promise<number> {
  let used = 0;
  let saved = 0;
  const order = seqs.map((s, i) => ({ s, i })).sort((a, b) => b.s.nextTokenIndex - a.s.nextTokenIndex);
  for (const { s, i } of order) {
    if (s.nextTokenIndex < MIN_SAVED_TOKENS) continue;
    const file = slotFile(dir, fingerprint, i);
    try {
      const { fileSize } = await s.saveStateToFile(file);
      if (used + fileSize > budgetBytes) {
        await rm(file, { force: true });
        continue;
      }
      used += fileSize;
      saved++;
    } catch {
      await rm(file, { force: true });
    }
  }
  return saved;
}

/** Loads the states saved for this fingerprint back into their slots; each file is used once. */
export async function restoreSlotStates(seqs: readonly LlamaContextSequence[], dir: string, fingerprint: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  let restored = 0;
  for (const [i, seq] of seqs.entries()) {
    const file = slotFile(dir, fingerprint, i);
    if (!names.includes(path.basename(file))) continue;
    try {
      await seq.loadStateFromFile(file, { acceptRisk: true });
      restored++;
    } catch {
      await seq.clearHistory().catch(() => undefined);
    } finally {
      await rm(file, { force: true });
    }
  }
  return restored;
}
