// errorMessage: what a client reads for an error that is not an ApiError.
import { describe, expect, it } from "vitest";
import { errorMessage } from "../../src/daemon/errors.js";

const sysError = (code: string, message: string) => Object.assign(new Error(message), { code, syscall: "write" });

describe("errorMessage", () => {
  it("says what to do when the disk is full or the quota is used up, whichever write failed", () => {
    expect(errorMessage(sysError("ENOSPC", "ENOSPC: no space left on device, write"))).toBe(
      "no space left on device: free disk space where the models are stored (OLLAMA_MODELS), then try again",
    );
    expect(errorMessage(sysError("EDQUOT", "EDQUOT: disk quota exceeded, open '/m/blobs/x'"))).toBe(
      "disk quota exceeded: free disk space where the models are stored (OLLAMA_MODELS), then try again",
    );
  });

  it("passes other errors' messages through", () => {
    expect(errorMessage(sysError("EACCES", "EACCES: permission denied, open '/m/blobs/x'"))).toBe("EACCES: permission denied, open '/m/blobs/x'");
    expect(errorMessage(new Error("boom"))).toBe("boom");
    expect(errorMessage("text")).toBe("text");
    expect(errorMessage(null)).toBe("null");
  });
});
