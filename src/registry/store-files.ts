// The file-system primitives the store is built on: a readdir that treats a missing directory as
// empty, the case-insensitive directory lookup that lets on-disk casing win, and durable atomic
// writes (temp file, fsync, rename, fsync of the directory). Separate from store.ts because they
// know nothing of blobs or manifests.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";

export const errCode = (e: unknown) => (e as NodeJS.ErrnoException).code;
export const isNotFound = (e: unknown): boolean => errCode(e) === "ENOENT" || errCode(e) === "ENOTDIR";

/** readdir that treats a missing directory as empty. */
export async function listDir(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (e) {
    if (isNotFound(e)) return [];
    throw e;
  }
}

/** Directory entry matching `part`: exact first, else case-insensitive (on-disk casing wins). */
export async function findEntry(dir: string, part: string): Promise<string | null> {
  const names = await listDir(dir);
  if (names.includes(part)) return part;
  const lower = part.toLowerCase();
  return names.sort().find((n) => n.toLowerCase() === lower) ?? null;
}

export async function fsyncDir(dir: string): Promise<void> {
  // Makes a rename durable; some platforms (Windows) cannot fsync a directory, so best effort.
  const fh = await fs.open(dir, "r").catch(() => null);
  await fh?.sync().catch(() => {});
  await fh?.close();
}

/** Write `data` to a fresh temp file next to `file`, fsync, chmod 0644, rename over `file`. */
export async function atomicWrite(file: string, data: Uint8Array): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.tmp-${randomBytes(6).toString("hex")}`);
  try {
    const fh = await fs.open(tmp, "wx", 0o644);
    try {
      await fh.writeFile(data);
      await fh.chmod(0o644);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  await fsyncDir(dir);
}
