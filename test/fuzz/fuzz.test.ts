// The fuzzer in CI: the first FUZZ_CASES (default 200) cases of seed 1 against a real daemon and
// real runners on the generated tiny models (docs/fuzzing.md). Every oracle must hold; a failure
// lists each class of finding with the cases that reproduce it (`npx tsx scripts/fuzz.ts --case K`).
import { describe, expect, it } from "vitest";
import { findingClasses, formatClasses } from "../../scripts/fuzz/report.js";
import { runFuzz } from "../../scripts/fuzz/run.js";

const CASES = Number(process.env.FUZZ_CASES ?? 200);
const SEED = Number(process.env.FUZZ_SEED ?? 1);

describe(`fuzzer: cases 0..${CASES - 1} of seed ${SEED}`, () => {
  it("no crash, hang, undesigned 5xx, stall over 1 s, RSS growth over 64 MiB, stack trace or store leftover", async () => {
    // shorter waits than `npm run fuzz`, so even a run with stuck cases ends in CI's time
    const report = await runFuzz({ seed: SEED, from: 0, cases: CASES, deadlineMs: 10_000, healthWaitMs: 10_000, log: () => undefined });
    expect(formatClasses(findingClasses(report.findings), SEED)).toBe("");
    expect(report.ran).toBe(CASES);
  }, 20 * 60_000);
});
