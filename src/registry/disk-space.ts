// Disk space for a pull: the free space of the store's file system (statfs) checked before a
// byte is allocated, and a full disk during the writes (ENOSPC, EDQUOT) turned into one clear
// error that names the file and says what to do.
import { promises as fs } from "node:fs";
import path from "node:path";
import { humanBytes } from "../cli/format.js";

export class NoSpaceError extends Error {
  override name = "NoSpaceError";
}

export function isNoSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/** `err` as a NoSpaceError naming `file` when it is a full disk, else `err` itself. */
export function noSpaceWhileWriting(err: unknown, file: string): unknown {
  if (!isNoSpace(err)) return err;
  return new NoSpaceError(`no space left on device while writing ${file}; free up space and pull again`);
}

/** Bytes available to us on the file system holding `dir` (or its nearest existing parent); null when unknown. */
export async function freeBytes(dir: string): Promise<number | null> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      const st = await fs.statfs(d);
      return st.bavail * st.bsize;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || path.dirname(d) === d) return null;
    }
  }
}

/** Refuse `what` when it needs more than the free space where `dir` is. */
export async function checkFreeSpace(dir: string, needed: number, what: string): Promise<void> {
  const free = await freeBytes(dir);
  if (free === null || needed <= free) return;
  throw new NoSpaceError(
    `not enough disk space: ${what} needs ${humanBytes(needed)} (${needed} bytes) but only ${humanBytes(free)} (${free} bytes) are free; free up space or set OLLAMA_MODELS to a larger disk`,
  );
}
