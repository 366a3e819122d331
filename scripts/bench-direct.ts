// The direct half of the parallel case (bench-parallel.ts): the same streams on plain
// node-llama-cpp, one context of 4 sequences with its default batching. Run as a child of the
// bench (bench-child.ts), which sends the job over IPC and receives its result back.
import { runParallelDirect, type ParallelPlan } from "./bench-parallel-direct.js";

export type DirectJob = { job: "parallel"; plan: ParallelPlan };

process.once("message", (m) => {
  runParallelDirect((m as DirectJob).plan).then(
    (result) => process.send?.({ ok: true, result }, () => process.exit(0)),
    (err: unknown) => {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      process.send?.({ ok: false, message }, () => process.exit(1));
    },
  );
});
