// A small file system of its own for OLLAMA_MODELS, so a write can run out of space without
// touching anyone else's disk: a tmpfs of the given size, or, where tmpfs cannot be mounted, an
// ext4 image on a loop device. Both need the right to mount (root); without it the caller is told
// why and the disk part is skipped. `fill` eats the free space down to what is asked.
import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface SmallFs {
  dir: string;
  kind: string;
  /** Free bytes as an unprivileged writer sees them. */
  free(): Promise<number>;
  /** Writes a filler file that leaves `leave` bytes free (0: until the disk is full). */
  fill(leave: number): Promise<void>;
  /** Removes the filler files. */
  unfill(): Promise<void>;
  unmount(): Promise<void>;
}

const errText = (e: unknown) => ((e as { stderr?: string }).stderr || (e as Error).message).trim();

export async function mountSmallFs(sizeMiB: number): Promise<SmallFs> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-smallfs-"));
  const reasons: string[] = [];
  let kind = "";
  let image: string | undefined;
  try {
    await run("mount", ["-t", "tmpfs", "-o", `size=${sizeMiB}m,mode=0755`, "tmpfs", dir]);
    kind = `tmpfs ${sizeMiB} MiB`;
  } catch (e) {
    reasons.push(`tmpfs: ${errText(e)}`);
    image = `${dir}.img`;
    try {
      await run("truncate", ["-s", `${sizeMiB}M`, image]);
      await run("mkfs.ext4", ["-q", "-F", image]);
      await run("mount", ["-o", "loop", image, dir]);
      kind = `ext4 on a loop device, ${sizeMiB} MiB`;
    } catch (e2) {
      reasons.push(`loop ext4: ${errText(e2)}`);
      await rm(image, { force: true });
      await rm(dir, { recursive: true, force: true });
      throw new Error(`cannot mount a small file system here (${reasons.join("; ")})`);
    }
  }
  const fillers = path.join(dir, "filler");
  let n = 0;
  const free = async () => {
    const s = await fs.statfs(dir);
    return s.bavail * s.bsize;
  };
  return {
    dir,
    kind,
    free,
    fill: async (leave) => {
      const fh = await fs.open(`${fillers}-${n++}`, "w");
      const chunk = Buffer.alloc(1 << 20, 0x5a);
      try {
        for (let want = (await free()) - leave; want > 0; want -= chunk.length) {
          await fh.write(chunk, 0, Math.min(chunk.length, want));
        }
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
      } finally {
        await fh.close();
      }
    },
    unfill: async () => {
      for (const f of await fs.readdir(dir)) if (f.startsWith("filler-")) await rm(path.join(dir, f), { force: true });
    },
    unmount: async () => {
      await run("umount", [dir]).catch(() => run("umount", ["-l", dir]));
      await rm(dir, { recursive: true, force: true });
      if (image) await rm(image, { force: true });
    },
  };
}
