// What goes into each llama.cpp batch of the runner's context (node-llama-cpp's custom
// itemPrioritizationStrategy), for two reasons:
// - Order: with one KV cache per sequence, llama.cpp puts only sequences with consecutive ids,
//   in ascending order, into one micro-batch; any other order splits the batch into several
//   graph runs, each reading all the weights. Items are therefore sorted by sequence id.
// - Long prompts next to decoding streams: a prompt may take at most PROMPT_CHUNK_WITH_DECODERS
//   tokens of a batch that also carries other sequences' next tokens, so a request that joins
//   with a long prompt delays the streams already decoding by one short chunk per token, not by
//   a whole batch (a 512-token chunk is seconds on a CPU). Alone, a prompt takes the whole batch.
import type { BatchItem, CustomBatchingPrioritizationStrategy, LlamaContext, PrioritizedBatchItem } from "node-llama-cpp";
import type { BatchShape } from "./decode-threads.js";

/** Prompt tokens per batch while other sequences decode: past ~64 tokens a CPU batch is
 *  compute-bound, so bigger chunks only lengthen the decoders' wait. */
export const PROMPT_CHUNK_WITH_DECODERS = 128;

/** An item needing at most this many tokens is a decoding sequence's next token(s). */
const DECODE_ITEM_MAX_TOKENS = 1;

/**
 * Splits `size` batch slots over items: every item gets at least one token, short items get
 * what they need and the longest share the rest evenly (water-filling). With decoding items
 * present, no item gets more than `promptCap`.
 */
export function planBatch(lengths: readonly number[], size: number, promptCap = PROMPT_CHUNK_WITH_DECODERS): number[] {
  const amounts = lengths.map(() => 0);
  const decoding = lengths.some((n) => n <= DECODE_ITEM_MAX_TOKENS) && lengths.some((n) => n > DECODE_ITEM_MAX_TOKENS);
  const cap = decoding ? promptCap : Infinity;
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a]! - lengths[b]!);
  let left = size;
  order.forEach((index, k) => {
    if (left <= 0) return;
    const share = Math.max(1, Math.floor(left / (order.length - k)));
    const take = Math.min(lengths[index]!, share, cap, left);
    amounts[index] = take;
    left -= take;
  });
  return amounts;
}

/** The internal queue node-llama-cpp 3.21.1 builds the strategy's items from, in the same order. */
interface QueuedDecode {
  sequenceId: number;
  tokens: readonly unknown[];
}

function queuedDecodesOf(context: LlamaContext): readonly QueuedDecode[] | undefined {
  const queue = (context as unknown as { _queuedDecodes?: unknown })._queuedDecodes;
  return Array.isArray(queue) ? (queue as QueuedDecode[]) : undefined;
}

/**
 * The strategy for a context; `contextRef()` returns the context once it exists. When the
 * sequence of an item cannot be told (another node-llama-cpp version), items keep their order.
 * node-llama-cpp calls it right before it allocates each batch's threads, so `beforeBatch` is
 * where the thread budget is brought up to date (thread-budget.ts, decode-threads.ts).
 */
export function batchPlanStrategy(contextRef: () => LlamaContext | undefined, beforeBatch: (batch: BatchShape) => void = () => {}): CustomBatchingPrioritizationStrategy {
  return ({ items, size }: { items: readonly BatchItem[]; size: number }): PrioritizedBatchItem[] => {
    const amounts = planBatch(
      items.map((item) => item.tokens.length),
      size,
    );
    beforeBatch({ items: amounts.filter((a) => a > 0).length, tokens: amounts.reduce((a, b) => a + b, 0) });
    const context = contextRef();
    const queue = context ? queuedDecodesOf(context) : undefined;
    const aligned = queue !== undefined && queue.length === items.length && queue.every((q, i) => q.tokens === items[i]!.tokens);
    const order = items.map((_, i) => i);
    if (aligned) order.sort((a, b) => queue[a]!.sequenceId - queue[b]!.sequenceId);
    return order.filter((i) => amounts[i]! > 0).map((i) => ({ item: items[i]!, processAmount: amounts[i]! }));
  };
}
