// Temp files that a write killed midway (kill -9, power loss, OOM) leaves in blobs/: a blob being
// streamed in (`sha256-<hex>-partial-tmp…`, Store.writeBlobStream), a part state being replaced
// (`.sha256-<hex>-partial-<N>.….tmp`, blob-parts.ts) and a model being quantized or converted
// (`.quantize-….tmp`, `.convert-….tmp`, derived-blob.ts), with the lock directories their writers
// held. Every one is written under a proper-lockfile lock: the blob's, or for the quantizer and
// the converter the temp file's own. The
// sweep takes that lock itself (it only succeeds when the lock is free or stale, i.e. the writer
// is gone), removes the temp files and releases it, which removes the dead writer's lock
// directory as well; holding the lock keeps a writer that starts meanwhile, in any process, safe.
// Ollama's own files (resumable `-partial` downloads, its `sha256-<digits>` upload temps) are
// never touched, and nothing here depends on OLLAMA_NOPRUNE: these files can never be resumed.
import { promises as fs } from "node:fs";
import path from "node:path";
import lockfile from "proper-lockfile";
import { errCode } from "./store-files.js";

/** proper-lockfile's default: a lock not refreshed for this long belongs to a dead process. */
export const LOCK_STALE_MS = 10_000;

/** Our temp names in blobs/, each with the file whose lock its writer holds. */
const TEMPS: Array<{ name: RegExp; lockOf: (m: RegExpExecArray) => string }> = [
  { name: /^(sha256-[0-9a-f]{64})-partial-tmp[0-9a-f]+$/, lockOf: (m) => m[1]! },
  { name: /^\.(sha256-[0-9a-f]{64})-partial-\d+\.[0-9a-f]+\.tmp$/, lockOf: (m) => m[1]! },
  { name: /^\.(quantize|convert)-[0-9a-f]+\.tmp$/, lockOf: (m) => m[0] },
];
/** A lock directory left with no temp file: `<file>.lock` for a blob or a quantizer/converter temp. */
const LOCK_DIR = /^(sha256-[0-9a-f]{64}|\.(quantize|convert)-[0-9a-f]+\.tmp)\.lock$/;

export interface SweepResult {
  /** Temp files removed (names in blobs/). */
  removed: string[];
  /** Lock targets whose lock is held and fresh: a writer is still at work (or died < 10 s ago). */
  busy: string[];
}

/** Groups the entries of blobs/ by the lock that guards them. */
function byLock(entries: string[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const e of entries) {
    const dir = LOCK_DIR.exec(e);
    if (dir) {
      if (!groups.has(dir[1]!)) groups.set(dir[1]!, []);
      continue;
    }
    for (const t of TEMPS) {
      const m = t.name.exec(e);
      if (!m) continue;
      const key = t.lockOf(m);
      groups.set(key, [...(groups.get(key) ?? []), e]);
    }
  }
  return groups;
}

export async function sweepDeadWriters(blobsDir: string): Promise<SweepResult> {
  const result: SweepResult = { removed: [], busy: [] };
  const entries = await fs.readdir(blobsDir).catch(() => [] as string[]);
  for (const [target, temps] of byLock(entries)) {
    let release: () => Promise<void>;
    try {
      release = await lockfile.lock(path.join(blobsDir, target), { realpath: false, retries: 0, stale: LOCK_STALE_MS, onCompromised: () => undefined });
    } catch (e) {
      if (errCode(e) === "ELOCKED") result.busy.push(target);
      continue; // anything else (a read-only store): leave it as it is
    }
    try {
      for (const t of temps) {
        await fs.rm(path.join(blobsDir, t), { force: true });
        result.removed.push(t);
      }
    } finally {
      await release().catch(() => undefined);
    }
  }
  return result;
}

export interface SweepLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * At daemon start: sweep now, and once more when the locks that were still fresh have had time to
 * go stale (a writer killed just before this start). Never throws; the timer does not keep the
 * process alive. Resolves after the first sweep.
 */
export async function sweepAtStartup(blobsDir: string, log: SweepLog): Promise<void> {
  const run = async (): Promise<SweepResult> => {
    try {
      const r = await sweepDeadWriters(blobsDir);
      if (r.removed.length > 0) log.info(`removed ${r.removed.length} temp file(s) left by interrupted writes`, { files: r.removed.join(",") });
      return r;
    } catch (e) {
      log.warn("could not sweep temp files", { error: (e as Error).message });
      return { removed: [], busy: [] };
    }
  };
  const first = await run();
  if (first.busy.length > 0) setTimeout(() => void run(), LOCK_STALE_MS + 1_000).unref();
}
