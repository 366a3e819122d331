import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIN_NODE, nodeTooOld } from "../../src/cli/node-version.js";

describe("the oldest Node.js the command runs on", () => {
  it("is the one package.json's engines names", () => {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, "../../package.json"), "utf8")) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${MIN_NODE}`);
  });

  it("older ones are refused, that one and newer ones are not", () => {
    for (const v of ["18.20.8", "16.0.0", "20.18.3", "20.0.0", "19.9.0"]) expect(nodeTooOld(v), v).toBe(true);
    for (const v of ["20.19.0", "20.19.5", "20.20.2", "21.0.0", "22.23.5", "24.22.3", "25.9.0", "100.0.0"]) expect(nodeTooOld(v), v).toBe(false);
  });
});
