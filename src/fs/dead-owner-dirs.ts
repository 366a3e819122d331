// Private directories named after the process that made them (`<prefix><pid>-<random>`): the
// ones whose process is gone (killed, crashed) are removed by the next one to look, so a crash
// loop cannot pile up state files on disk.
import { readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Removes `parent`'s directories `<prefix><pid>-<6 chars>` that are ours and whose pid is gone;
 *  never fails. */
export function removeDeadOwnerDirs(parent: string, prefix: string): void {
  const name = new RegExp(`^${escapeRegExp(prefix)}(\\d+)-[A-Za-z0-9]{6}$`);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const entry of names) {
    const m = name.exec(entry);
    if (!m || alive(Number(m[1]))) continue;
    const dir = path.join(parent, entry);
    try {
      const st = statSync(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // another process cleaned it, or it is not ours to remove
    }
  }
}
