// API key parsing (OLLAMA_API_KEYS, the keys file's format and its safety checks), the
// constant-time lookup, and the rule that no message ever holds a key.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { digestKey, findApiKey, mergeApiKeys, parseApiKeyList, parseApiKeysFile } from "../../src/api-keys.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { loadApiKeys, MAX_KEYS_FILE_BYTES, readKeysFile } from "../../src/daemon/keys-file.js";
import { displayEnv, parseEnvArg } from "../../src/service/common.js";

const K1 = "k1-0123456789abcdef0123";
const K2 = "k2-fedcba9876543210fedc";

/** The error `fn` throws (sync or async), checked to hold no key. */
async function failure(fn: () => unknown, ...secrets: string[]): Promise<Error> {
  let err: unknown;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  expect(err, "expected an error").toBeInstanceOf(Error);
  for (const s of secrets) expect((err as Error).message).not.toContain(s);
  return err as Error;
}

describe("OLLAMA_API_KEYS", () => {
  it("parses comma-separated keys with scope all and keeps only their digests", () => {
    const c = loadConfig({ OLLAMA_API_KEYS: ` ${K1} ,${K2},` });
    expect(c.apiKeys.map((k) => k.scope)).toEqual(["all", "all"]);
    expect(c.apiKeys.map((k) => k.source)).toEqual(["OLLAMA_API_KEYS key 1", "OLLAMA_API_KEYS key 2"]);
    expect(c.apiKeys[0]!.digest.equals(digestKey(K1))).toBe(true);
    // Nothing in the config holds the key text.
    expect(JSON.stringify(c)).not.toContain(K1);
    expect(Object.isFrozen(c.apiKeys)).toBe(true);
  });

  it("is off by default, and the other variables have their defaults", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ apiKeys: [], apiKeysFile: "", noManagement: false, apiKey: "" });
  });

  it("reads OLLAMA_API_KEYS_FILE as an absolute path, OLLAMA_NO_MANAGEMENT as a bool, OLLAMA_API_KEY as is", () => {
    const c = loadConfig({ OLLAMA_API_KEYS_FILE: "rel/keys", OLLAMA_NO_MANAGEMENT: "1", OLLAMA_API_KEY: ` "${K1}" ` });
    expect(c.apiKeysFile).toBe(path.resolve("rel/keys"));
    expect(c.noManagement).toBe(true);
    expect(c.apiKey).toBe(K1);
    expect(loadConfig({ OLLAMA_NO_MANAGEMENT: "false" }).noManagement).toBe(false);
  });

  const bad: [Record<string, string>, RegExp][] = [
    [{ OLLAMA_API_KEYS: "," }, /^OLLAMA_API_KEYS: no keys given/],
    [{ OLLAMA_API_KEYS: `${K1},bad key-with space` }, /^OLLAMA_API_KEYS: key 2: the key has a character a key may not have/],
    [{ OLLAMA_API_KEYS: `${K1}#x` }, /^OLLAMA_API_KEYS: key 1: /],
    [{ OLLAMA_API_KEYS: `caf\u00e9-0123456789abcdef` }, /^OLLAMA_API_KEYS: key 1: .*openssl rand -hex 32/],
    [{ OLLAMA_API_KEY: "secret\u00e9value-0123456789" }, /^OLLAMA_API_KEY: the key has a character/],
  ];
  for (const [env, want] of bad) {
    it(`refuses ${JSON.stringify(env)} naming the variable, not the key`, async () => {
      const err = await failure(() => loadConfig(env), "bad key-with", "secret\u00e9", "caf\u00e9", K1);
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toMatch(want);
    });
  }
});

describe("the keys file format", () => {
  it("one key per line, an optional scope, comments and blank lines", () => {
    const keys = parseApiKeysFile(`# ops keys\n\n${K1}\n  ${K2}   inference   # the web UI\r\nk3-aaaaaaaaaaaaaaaaaaaa all\n`, "F");
    expect(keys.map((k) => [k.scope, k.source])).toEqual([
      ["all", "F line 3"],
      ["inference", "F line 4"],
      ["all", "F line 5"],
    ]);
    expect(findApiKey(keys, K2)?.scope).toBe("inference");
  });

  const bad: [string, RegExp][] = [
    [`${K1} inference extra`, /^F line 1: expected "<key> \[all\|inference\]"/],
    [`${K1} admin`, /^F line 1: the word after the key must be its scope, all or inference$/],
    [`\n${K1}\u00e9`, /^F line 2: the key has a character/],
    [`${K1} half-of-${K2}`, /^F line 1: the word after the key/],
  ];
  for (const [text, want] of bad) {
    it(`refuses ${JSON.stringify(text)} naming the line, not the key`, async () => {
      const err = await failure(() => parseApiKeysFile(text, "F"), K1, K2, "half-of");
      expect(err.message).toMatch(want);
    });
  }

  it("a key given twice must have one scope", async () => {
    const a = parseApiKeyList(K1);
    expect(mergeApiKeys(a, parseApiKeysFile(`${K1} all\n${K2}`, "F"))).toHaveLength(2);
    const err = await failure(() => mergeApiKeys(a, parseApiKeysFile(`${K2}\n${K1} inference`, "F")), K1);
    expect(err.message).toBe("F line 2: the same key as OLLAMA_API_KEYS key 1, with another scope (inference, not all); give each key once");
  });
});

describe("findApiKey", () => {
  const keys = mergeApiKeys(parseApiKeyList(`${K1},${K2}`), parseApiKeysFile("k3-bbbbbbbbbbbbbbbbbbbbbbbb inference", "F"));
  it("finds the key presented, by value, whatever its length", () => {
    expect(findApiKey(keys, K2)?.source).toBe("OLLAMA_API_KEYS key 2");
    expect(findApiKey(keys, "k3-bbbbbbbbbbbbbbbbbbbbbbbb")?.scope).toBe("inference");
    for (const wrong of ["", "k", K1.slice(0, -1), `${K1}x`, K1.toUpperCase(), "x".repeat(10_000)]) {
      expect(findApiKey(keys, wrong), wrong.slice(0, 30)).toBeUndefined();
    }
  });

  it("compares fixed-length digests, so the key's length does not show", () => {
    expect(new Set(keys.map((k) => k.digest.length))).toEqual(new Set([32]));
    expect(digestKey("a").length).toBe(digestKey("a".repeat(1000)).length);
  });
});

describe("OLLAMA_API_KEYS_FILE at daemon start", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ollamats-keys-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string, mode = 0o600) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    chmodSync(p, mode);
    return p;
  };

  it("reads a private file and adds its keys to OLLAMA_API_KEYS", async () => {
    const p = file("ok", `${K2} inference\n`);
    const keys = await loadApiKeys(loadConfig({ OLLAMA_API_KEYS: K1, OLLAMA_API_KEYS_FILE: p }));
    expect(keys.map((k) => [k.scope, k.source])).toEqual([
      ["all", "OLLAMA_API_KEYS key 1"],
      ["inference", `OLLAMA_API_KEYS_FILE ${p} line 1`],
    ]);
    expect(await readKeysFile(file("group-read", K1, 0o640))).toHaveLength(1);
  });

  it("without a file, the keys are OLLAMA_API_KEYS'", async () => {
    expect(await loadApiKeys(loadConfig({}))).toEqual([]);
  });

  it("refuses a file others can read or change, naming the mode and the fix", async () => {
    for (const mode of [0o644, 0o604, 0o602, 0o620]) {
      const p = file(`open-${mode.toString(8)}`, K1, mode);
      const err = await failure(() => readKeysFile(p), K1);
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toBe(
        `OLLAMA_API_KEYS_FILE: ${p} can be read or changed by other users (mode 0${mode.toString(8)}); make it private: chmod 600 ${p}`,
      );
    }
  });

  it("refuses what is not a readable regular file, at once (a FIFO does not block the start)", async () => {
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", ["-m", "600", fifo]);
    const sub = path.join(dir, "sub");
    mkdirSync(sub, { mode: 0o700 });
    const cases: [string, string][] = [
      [fifo, `OLLAMA_API_KEYS_FILE: ${fifo} is not a regular file`],
      [sub, `OLLAMA_API_KEYS_FILE: ${sub} is not a regular file`],
      [path.join(dir, "missing"), `OLLAMA_API_KEYS_FILE: ${path.join(dir, "missing")} does not exist`],
    ];
    for (const [p, want] of cases) expect((await failure(() => readKeysFile(p))).message).toBe(want);
    const big = file("big", `${"#".repeat(MAX_KEYS_FILE_BYTES)}\n${K1}\n`);
    expect((await failure(() => readKeysFile(big), K1)).message).toMatch(/^OLLAMA_API_KEYS_FILE: .* bytes; a keys file holds at most 1048576$/);
  });

  it("refuses a file without keys unless OLLAMA_API_KEYS has some, and a bad line, naming the file", async () => {
    const empty = file("empty", "# nothing yet\n\n");
    const err = await failure(() => loadApiKeys(loadConfig({ OLLAMA_API_KEYS_FILE: empty })));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(`OLLAMA_API_KEYS_FILE: ${empty} holds no keys, so every request would be refused; add one key per line, or unset OLLAMA_API_KEYS_FILE`);
    expect(await loadApiKeys(loadConfig({ OLLAMA_API_KEYS: K1, OLLAMA_API_KEYS_FILE: empty }))).toHaveLength(1);
    const badLine = file("bad", `${K1}\n${K2} everything\n`);
    const bad = await failure(() => loadApiKeys(loadConfig({ OLLAMA_API_KEYS_FILE: badLine })), K1, K2);
    expect(bad).toBeInstanceOf(ConfigError);
    expect(bad.message).toBe(`OLLAMA_API_KEYS_FILE ${badLine} line 2: the word after the key must be its scope, all or inference`);
  });
});

describe("keys stay out of service files", () => {
  it("refuses OLLAMA_API_KEYS and OLLAMA_API_KEY in --env, without repeating the value", async () => {
    for (const arg of [`OLLAMA_API_KEYS=${K1}`, "OLLAMA_API_KEYS", `OLLAMA_API_KEY=${K1}`]) {
      const err = await failure(() => parseEnvArg(arg, { OLLAMA_API_KEYS: K1 }), K1);
      expect(err.message).toMatch(/^--env OLLAMA_API_KEYS?: /);
    }
    expect(parseEnvArg("OLLAMA_API_KEYS=", {})).toEqual(["OLLAMA_API_KEYS", undefined]);
    expect(parseEnvArg("OLLAMA_API_KEYS_FILE=/etc/ollamats/keys", {})).toEqual(["OLLAMA_API_KEYS_FILE", "/etc/ollamats/keys"]);
  });

  it("shows a key found in an existing file redacted", () => {
    expect(displayEnv("OLLAMA_API_KEYS", K1)).toBe("OLLAMA_API_KEYS=<redacted>");
    expect(displayEnv("OLLAMA_HOST", "0.0.0.0")).toBe("OLLAMA_HOST=0.0.0.0");
  });
});
