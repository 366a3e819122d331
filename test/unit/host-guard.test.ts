import os from "node:os";
import { describe, expect, it } from "vitest";
import { hostAllowed } from "../../src/daemon/middleware/host-guard.js";

describe("DNS-rebinding guard: which Host headers a loopback daemon answers", () => {
  it("answers loopback and private addresses, with or without a port", () => {
    for (const h of ["127.0.0.1", "127.0.0.1:11434", "[::1]:11434", "::1", "10.1.2.3:80", "192.168.0.9", "172.16.5.5:1", "169.254.1.1", "0.0.0.0:11434", "[fd00::1]:8080"]) {
      expect(hostAllowed(h), h).toBe(true);
    }
  });

  it("answers local names: localhost, this machine's name, .localhost .local .internal", () => {
    for (const h of ["localhost", "LOCALHOST:11434", `${os.hostname()}:11434`, "app.localhost", "printer.local:631", "db.internal", undefined]) {
      expect(hostAllowed(h), String(h)).toBe(true);
    }
  });

  it("refuses other names and public addresses that are not this machine's", () => {
    for (const h of ["evil.example", "evil.example:11434", "localhost.evil.example", "8.8.8.8", "[2001:4860:4860::8888]:443", "127.0.0.1.nip.io"]) {
      expect(hostAllowed(h), h).toBe(false);
    }
  });
});
