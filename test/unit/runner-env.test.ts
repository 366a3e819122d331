import { describe, expect, it } from "vitest";
import { runnerEnv, withHugePages } from "../../src/backends/llamacpp/runner-env.js";

describe("a runner's environment", () => {
  it("asks glibc's malloc for transparent huge pages, beside tunables the user set", () => {
    expect(withHugePages(undefined)).toBe("glibc.malloc.hugetlb=1");
    expect(withHugePages("")).toBe("glibc.malloc.hugetlb=1");
    expect(withHugePages("glibc.malloc.arena_max=2")).toBe("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  });

  it("leaves a hugetlb the user chose as it is", () => {
    expect(withHugePages("glibc.malloc.hugetlb=0")).toBe("glibc.malloc.hugetlb=0");
    expect(withHugePages("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2")).toBe("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2");
  });

  it("keeps the daemon's variables, adds the backend's, and sets the tunable on Linux only", () => {
    const env = runnerEnv({ PATH: "/bin", GLIBC_TUNABLES: "glibc.malloc.arena_max=2" }, { CUDA_VISIBLE_DEVICES: "1" }, "linux", undefined);
    expect(env).toEqual({ PATH: "/bin", CUDA_VISIBLE_DEVICES: "1", GLIBC_TUNABLES: "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1" });
    expect(runnerEnv({ PATH: "/bin" }, {}, "darwin", undefined)).toEqual({ PATH: "/bin" });
  });

  it("shares the daemon's compile cache (Node 22+), unless the user chose another or none", () => {
    expect(runnerEnv({}, {}, "darwin", "/tmp/node-compile-cache")).toEqual({ NODE_COMPILE_CACHE: "/tmp/node-compile-cache" });
    expect(runnerEnv({ NODE_COMPILE_CACHE: "/var/cache/x" }, {}, "darwin", "/tmp/c")).toEqual({ NODE_COMPILE_CACHE: "/var/cache/x" });
    expect(runnerEnv({ NODE_DISABLE_COMPILE_CACHE: "1" }, {}, "darwin", "/tmp/c")).toEqual({ NODE_DISABLE_COMPILE_CACHE: "1" });
  });
});
