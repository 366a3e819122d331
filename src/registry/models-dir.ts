// The model store's directory (OLLAMA_MODELS) is checked when the daemon starts: its `blobs` and
// `manifests` directories are created and a file is written and removed, so a path that is a file,
// lies under /proc, is read-only or belongs to someone else stops `serve` at once with what to do,
// instead of failing part-way through the first pull or create.
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { makeDirs } from "../fs/make-dirs.js";

export class ModelsDirError extends Error {
  override name = "ModelsDirError";
}

const REASONS: Record<string, string> = {
  ENOTDIR: "a part of the path is a file, not a directory",
  EEXIST: "a part of the path is a file, not a directory",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EROFS: "the file system is read-only",
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is used up",
  ENOENT: "the directory cannot be created there",
};

function problem(dir: string, at: string, err: unknown): ModelsDirError {
  const code = (err as NodeJS.ErrnoException).code ?? "";
  const reason = REASONS[code] ?? (err instanceof Error ? err.message : String(err));
  return new ModelsDirError(
    `the models directory ${dir} (OLLAMA_MODELS) cannot be used: ${reason} (${at}); set OLLAMA_MODELS to a directory ollamats can create and write`,
  );
}

export async function checkModelsDir(dir: string): Promise<void> {
  for (const sub of ["blobs", "manifests"]) {
    const d = path.join(dir, sub);
    try {
      await makeDirs(d);
    } catch (err) {
      throw problem(dir, d, err);
    }
  }
  const probe = path.join(dir, "blobs", `.write-check-${process.pid}`);
  try {
    await writeFile(probe, "");
  } catch (err) {
    throw problem(dir, probe, err);
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
}
