// The environment a runner process starts with: the daemon's, what the backend adds (GPU pinning:
// CUDA_VISIBLE_DEVICES, …), and glibc's malloc asked to back its large blocks with transparent
// huge pages. A load fills hundreds of MB of fresh memory (weights repacked for the CPU, the KV
// cache); in 4 KiB pages that is one fault per page, and where faults are dear (measured on a
// shadow-paging VM: ~16 µs each, 1 GB touched in 4.2 s) a 1B Q4_0 model's loadModel took 2.5 s
// against 1.2 s with 2 MiB pages, and createContext 0.5 s against 0.3 s. It takes effect where
// the kernel's THP mode is `madvise` (Ubuntu's and this machine's default); with `always` the
// pages are huge already, with `never` nothing changes, and older glibc ignores the tunable.
// A GLIBC_TUNABLES that already sets glibc.malloc.hugetlb is left as the user set it.
// On Node 22 and newer, the runner also reads and writes the daemon's compile cache (cli/main.ts
// turns it on; a child does not inherit it): importing node-llama-cpp took 185 ms instead of 215.
import module from "node:module";
import path from "node:path";

const HUGE_PAGES = "glibc.malloc.hugetlb=1";

/** GLIBC_TUNABLES with huge pages for malloc added, unless it says otherwise already. */
export function withHugePages(tunables: string | undefined): string {
  if (!tunables) return HUGE_PAGES;
  if (tunables.split(":").some((t) => t.trim().startsWith("glibc.malloc.hugetlb="))) return tunables;
  return `${tunables}:${HUGE_PAGES}`;
}

/** The directory this process's compile cache was given (Node 22.8+, when on), else undefined:
 *  Node reports its own subdirectory for this Node version, which a child would nest again. */
export function compileCacheDir(): string | undefined {
  const own = (module as { getCompileCacheDir?: () => string | undefined }).getCompileCacheDir?.();
  return own ? path.dirname(own) : undefined;
}

export function runnerEnv(
  base: NodeJS.ProcessEnv,
  extra: Record<string, string>,
  platform: NodeJS.Platform = process.platform,
  compileCache: string | undefined = compileCacheDir(),
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, ...extra };
  if (platform === "linux") env.GLIBC_TUNABLES = withHugePages(env.GLIBC_TUNABLES);
  if (compileCache && env.NODE_COMPILE_CACHE === undefined && env.NODE_DISABLE_COMPILE_CACHE === undefined) env.NODE_COMPILE_CACHE = compileCache;
  return env;
}
