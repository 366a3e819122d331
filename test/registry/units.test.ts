// Pure parts of the registry code: OpenSSH ed25519 keys (checked against ssh-keygen), the
// WWW-Authenticate parser, part planning, manifest validation and startup pruning.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  authorizedKey,
  challengeUrl,
  ensureIdentity,
  parseChallenge,
  parseOpenSshPrivateKey,
  signWith,
  tokenRequestSigningText,
  verifySignature,
} from "../../src/registry/auth.js";
import { DEFAULT_TUNING, planParts, validateParts } from "../../src/registry/blob-download.js";
import { registryBase } from "../../src/registry/client.js";
import { parseModelName } from "../../src/registry/name.js";
import { pruneAtStartup } from "../../src/registry/prune.js";
import { validateRemoteManifest } from "../../src/registry/pull.js";
import { parseQuantizeType } from "../../src/registry/quantize.js";
import { Store } from "../../src/registry/store.js";

const tmp: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), "ollamats-unit-"));
  tmp.push(d);
  return d;
}
afterEach(async () => {
  for (const d of tmp.splice(0)) await rm(d, { recursive: true, force: true });
});

describe("ed25519 identity", () => {
  const haveSsh = existsSync("/usr/bin/ssh-keygen");

  it.runIf(haveSsh)("reads a key made by ssh-keygen and derives the same public key", async () => {
    const dir = await tempDir();
    const key = path.join(dir, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "", "-f", key]);
    const id = parseOpenSshPrivateKey(await readFile(key, "utf8"));
    expect(authorizedKey(id)).toBe((await readFile(`${key}.pub`, "utf8")).trim().split(" ").slice(0, 2).join(" "));
  });

  it.runIf(haveSsh)("writes a key ssh-keygen accepts (0600, with its .pub), and reuses it", async () => {
    const dir = await tempDir();
    const file = path.join(dir, ".ollama", "id_ed25519");
    const id = await ensureIdentity(file);
    const pub = execFileSync("ssh-keygen", ["-y", "-f", file]).toString().trim();
    expect(pub.split(" ").slice(0, 2).join(" ")).toBe(authorizedKey(id));
    expect((await readFile(`${file}.pub`, "utf8")).trim()).toBe(authorizedKey(id));
    const again = await ensureIdentity(file);
    expect(authorizedKey(again)).toBe(authorizedKey(id));
  });

  it("signs `<pubkey>:<signature>` over Ollama's token request text", async () => {
    const dir = await tempDir();
    const id = await ensureIdentity(path.join(dir, "k"));
    const text = tokenRequestSigningText("https://registry.ollama.ai/v2/token?nonce=x");
    // base64 of the hex sha256 of "" (Ollama signs that for a GET)
    const emptyHex = createHash("sha256").update("").digest("hex");
    expect(text).toBe(`GET,https://registry.ollama.ai/v2/token?nonce=x,${Buffer.from(emptyHex).toString("base64")}`);
    const auth = signWith(id, text);
    expect(auth.split(":")[0]).toBe(authorizedKey(id).split(" ")[1]);
    expect(verifySignature(auth, text)).toBe(true);
    expect(verifySignature(auth, `${text}x`)).toBe(false);
  });
});

describe("WWW-Authenticate", () => {
  it("parses Bearer challenges as Ollama does", () => {
    expect(parseChallenge('Bearer realm="https://ollama.com:443/token",service="ollama.com",scope="repository:library/llama3:pull"')).toEqual({
      realm: "https://ollama.com:443/token",
      service: "ollama.com",
      scope: "repository:library/llama3:pull",
    });
    expect(parseChallenge("Bearer realm=https://a/t,service=s")).toEqual({ realm: "https://a/t", service: "s", scope: "" });
    expect(parseChallenge('Basic realm="x"')).toBeNull();
    expect(parseChallenge(undefined)).toBeNull();
  });

  it("builds the token URL with sorted query (Go's url.Values.Encode), ts and a 16-byte nonce", () => {
    const u = challengeUrl({ realm: "https://r/token", service: "svc", scope: "repository:a/b:pull repository:c/d:pull" }, new Date(1_700_000_000_000));
    expect(u.toString()).toMatch(/^https:\/\/r\/token\?nonce=[\w-]{22}&scope=repository%3Aa%2Fb%3Apull&scope=repository%3Ac%2Fd%3Apull&service=svc&ts=1700000000$/);
  });
});

describe("registry addressing", () => {
  it("uses the host of the name; http needs insecure", () => {
    expect(registryBase(parseModelName("llama3")!, false).toString()).toBe("https://registry.ollama.ai/");
    expect(registryBase(parseModelName("localhost:5000/ns/m:t")!, false).toString()).toBe("https://localhost:5000/");
    expect(registryBase(parseModelName("localhost:5000/ns/m:t")!, true).toString()).toBe("http://localhost:5000/");
    expect(() => registryBase(parseModelName("http://h/ns/m")!, false)).toThrow("insecure protocol http");
  });
});

describe("download parts", () => {
  it("splits like Ollama: total/16 within [100 MB, 1 GB]", () => {
    expect(planParts(50_000_000, DEFAULT_TUNING)).toEqual([{ N: 0, Offset: 0, Size: 50_000_000, Completed: 0 }]);
    const p = planParts(4_000_000_000, DEFAULT_TUNING);
    expect(p.length).toBe(16);
    expect(p.every((x) => x.Size === 250_000_000)).toBe(true);
    const big = planParts(32_000_000_000, DEFAULT_TUNING);
    expect(big.length).toBe(32);
    expect(planParts(0, DEFAULT_TUNING)).toEqual([]);
    const odd = planParts(250_000_001, DEFAULT_TUNING);
    expect(odd.map((x) => x.Size)).toEqual([100_000_000, 100_000_000, 50_000_001]);
  });

  it("only trusts saved part states that tile the blob exactly", () => {
    const parts = planParts(250_000_001, DEFAULT_TUNING).map((p) => ({ ...p, Completed: 7 }));
    expect(validateParts([...parts].reverse(), 250_000_001)?.map((p) => p.N)).toEqual([0, 1, 2]);
    expect(validateParts(parts, 250_000_000)).toBeNull();
    expect(validateParts(parts.slice(1), 250_000_001)).toBeNull();
    expect(validateParts([{ ...parts[0]!, Completed: parts[0]!.Size + 1 }, ...parts.slice(1)], 250_000_001)).toBeNull();
    expect(validateParts([{ ...parts[0]!, Offset: 1 }, ...parts.slice(1)], 250_000_001)).toBeNull();
  });
});

describe("remote manifests", () => {
  const hex = "d".repeat(64);
  const m = (layer: object) => Buffer.from(JSON.stringify({ schemaVersion: 2, config: { digest: `sha256:${"e".repeat(64)}`, size: 3 }, layers: [layer] }));
  it("accepts sha256:<64 lowercase hex> and rejects everything else", () => {
    expect(validateRemoteManifest(m({ mediaType: "x", digest: `sha256:${hex}`, size: 5 })).blobs.length).toBe(2);
    for (const digest of [`sha256:${hex.toUpperCase()}`, `sha256-${hex}`, "sha256:../../x", `sha256:${hex}/..`, "", `md5:${hex}`]) {
      expect(() => validateRemoteManifest(m({ digest, size: 1 }))).toThrow(/^pull model manifest: invalid digest/);
    }
    // a size beyond free space is refused later, by the disk check; only non-byte-counts are invalid
    for (const size of [-1, 0.5, 2 ** 53, 1e300, "1"]) expect(() => validateRemoteManifest(m({ digest: `sha256:${hex}`, size }))).toThrow(/^pull model manifest: (invalid|corrupt)/);
    expect(() => validateRemoteManifest(Buffer.from("{"))).toThrow(/^pull model manifest: corrupt/);
  });
});

describe("quantize types", () => {
  it("names what is supported", () => {
    expect(parseQuantizeType("q8_0")).toBe("Q8_0");
    expect(parseQuantizeType(" Q4_0 ")).toBe("Q4_0");
    expect(parseQuantizeType("q4_k_m")).toBe("Q4_K_M");
    expect(parseQuantizeType("q4_K")).toBe("Q4_K_M"); // Ollama's other spelling
    expect(parseQuantizeType("Q4_K_S")).toBe("Q4_K_S");
    expect(parseQuantizeType("bf16")).toBe("BF16");
    // Ollama's own message, for the types it refuses too
    expect(() => parseQuantizeType("q5_K_M")).toThrow("unsupported quantization type Q5_K_M - supported types are F32, F16, Q4_K_S, Q4_K_M, Q8_0, BF16, Q4_0");
    expect(() => parseQuantizeType("nope")).toThrow("unsupported quantization type NOPE - supported types are");
  });
});

describe("startup prune", () => {
  const log = { info: () => undefined, warn: () => undefined };
  const sha = (s: string) => createHash("sha256").update(s).digest("hex");
  const old = new Date(Date.now() - 2 * 3600_000);

  async function setup() {
    const root = await tempDir();
    const store = new Store(root);
    const kept = await store.writeBlobBytes("kept");
    const cfg = await store.writeBlobBytes("{}");
    const stale = await store.writeBlobBytes("stale");
    const young = await store.writeBlobBytes("young");
    await store.writeManifest(parseModelName("m")!, {
      schemaVersion: 2,
      mediaType: "application/vnd.docker.distribution.manifest.v2+json",
      config: { mediaType: "application/vnd.docker.container.image.v1+json", ...cfg },
      layers: [{ mediaType: "application/vnd.ollama.image.model", ...kept }],
    });
    const partial = path.join(store.blobsDir, `sha256-${sha("p")}-partial`);
    await writeFile(partial, "x");
    await writeFile(`${partial}-0`, "{}");
    await writeFile(path.join(store.blobsDir, `sha256:${sha("colon")}`), "colon");
    for (const f of [kept.digest, cfg.digest, stale.digest]) await utimes(store.blobPath(f), old, old);
    for (const f of [partial, `${partial}-0`]) await utimes(f, old, old);
    // an empty manifest directory left behind
    await mkdir(path.join(store.manifestsDir, "registry.ollama.ai", "gone", "model"), { recursive: true });
    return { store, kept, cfg, stale, young };
  }

  it("removes old unreferenced blobs and stale partials, keeps referenced and young ones, renames ':' names", async () => {
    const { store, kept, cfg, stale, young } = await setup();
    const removed = await pruneAtStartup(store, { noPrune: false }, log);
    expect(removed).toEqual([stale.digest]);
    const left = (await readdir(store.blobsDir)).sort();
    expect(left).toEqual([kept.digest, cfg.digest, young.digest, `sha256:${sha("colon")}`].map((d) => d.replace(":", "-")).sort());
    expect(await readdir(path.join(store.manifestsDir, "registry.ollama.ai"))).toEqual(["library"]);
  });

  it("does nothing with OLLAMA_NOPRUNE, or when a manifest is corrupt", async () => {
    const a = await setup();
    expect(await pruneAtStartup(a.store, { noPrune: true }, log)).toEqual([]);
    expect(await a.store.hasBlob(a.stale.digest)).toBe(true);
    const b = await setup();
    const bad = path.join(b.store.manifestsDir, "registry.ollama.ai", "library", "bad");
    await mkdir(bad, { recursive: true });
    await writeFile(path.join(bad, "latest"), "{not json");
    expect(await pruneAtStartup(b.store, { noPrune: false }, log)).toEqual([]);
    expect(await b.store.hasBlob(b.stale.digest)).toBe(true);
  });
});
