// mkdir -p without Node's `recursive: true`, which on Node 20 spins forever when the kernel
// answers ENOENT for a directory whose parent exists (e.g. anything under /proc): a bad
// OLLAMA_MODELS or --root must give an error, never a hung process.
import { mkdirSync, statSync } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";

function missingChain(dir: string, exists: (p: string) => boolean): string[] {
  const missing: string[] = [];
  let cur = path.resolve(dir);
  while (!exists(cur)) {
    missing.unshift(cur);
    const up = path.dirname(cur);
    if (up === cur) break;
    cur = up;
  }
  return missing;
}

function isEexist(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === "EEXIST";
}

export async function makeDirs(dir: string, mode = 0o755): Promise<void> {
  const exists = new Map<string, boolean>();
  for (let cur = path.resolve(dir); ; cur = path.dirname(cur)) {
    exists.set(cur, await stat(cur).then(() => true, () => false));
    if (exists.get(cur) || path.dirname(cur) === cur) break;
  }
  for (const d of missingChain(dir, (p) => exists.get(p) === true)) {
    await mkdir(d, { mode }).catch((err: unknown) => {
      if (!isEexist(err)) throw err;
    });
  }
}

export function makeDirsSync(dir: string, mode = 0o755): void {
  const exists = (p: string) => {
    try {
      statSync(p);
      return true;
    } catch {
      return false;
    }
  };
  for (const d of missingChain(dir, exists)) {
    try {
      mkdirSync(d, { mode });
    } catch (err) {
      if (!isEexist(err)) throw err;
    }
  }
}
