// Batches: a stream whose every step carries all the items that were ready at once (the events
// of one upstream read, say). A streamed token then costs one await per layer per batch, not
// per item, and the socket gets one write per batch; nothing waits to fill a batch.
export type Batches<T> = AsyncIterable<readonly T[]>;

/** Each item a batch of its own (streams whose producer yields one at a time). */
export async function* ofOne<T>(items: AsyncIterable<T>): Batches<T> {
  for await (const x of items) yield [x];
}

/** The items one by one (consumers that collect a whole answer). */
export async function* flatten<T>(batches: Batches<T>): AsyncIterable<T> {
  for await (const xs of batches) yield* xs;
}

/**
 * A per-item encoder over batches: `step` appends an item's outputs to `out` and returns true
 * at the final item (nothing after it is read). Batches that produce nothing are not passed on.
 * With `needsFinal`, input that ends before a final item is an error.
 */
export async function* encodeBatches<T, R>(batches: Batches<T>, step: (item: T, out: R[]) => boolean | void, needsFinal = false): Batches<R> {
  for await (const xs of batches) {
    const out: R[] = [];
    let final = false;
    for (const x of xs) if ((final = step(x, out) === true)) break;
    if (out.length > 0) yield out;
    if (final) return;
  }
  if (needsFinal) throw new Error("generation ended without a final response");
}
