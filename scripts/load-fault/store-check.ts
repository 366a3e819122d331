// Verifies an OLLAMA_MODELS store after a fault: every blob file hashes to its name, every
// manifest decodes and its config and layers exist with their sizes, and nothing else is left
// except Ollama's documented resumable downloads (`sha256-<hex>-partial` with consistent
// `-partial-<N>` part states). Temp files, lock directories and anything unexpected are leftovers.
import { promises as fs } from "node:fs";
import path from "node:path";
import { validateParts, type PartState } from "../../src/registry/blob-parts.js";
import { decodeManifest } from "../../src/registry/manifest.js";
import { sha256File } from "../../test/helpers/daemon.js";

export interface StoreReport {
  blobs: number;
  manifests: number;
  /** Resumable downloads: `sha256-<hex>-partial`, with bytes completed / total. */
  resumable: string[];
  /** Files or directories that should not be there. */
  leftovers: string[];
  /** Blobs that do not hash to their name, manifests that do not decode or miss a layer. */
  problems: string[];
}

export const storeOk = (r: StoreReport): boolean => r.leftovers.length === 0 && r.problems.length === 0;

export function describeStore(r: StoreReport): string {
  const parts = [`${r.blobs} blobs, ${r.manifests} manifests verify`];
  if (r.resumable.length) parts.push(`resumable: ${r.resumable.join(", ")}`);
  if (r.leftovers.length) parts.push(`leftovers: ${r.leftovers.join(", ")}`);
  if (r.problems.length) parts.push(`problems: ${r.problems.join("; ")}`);
  return parts.join("; ");
}

const BLOB = /^sha256-([0-9a-f]{64})$/;
const PARTIAL = /^sha256-[0-9a-f]{64}-partial$/;
const PART_STATE = /^(sha256-[0-9a-f]{64}-partial)-(\d+)$/;

async function entries(dir: string): Promise<string[]> {
  return fs.readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [];
    throw e;
  });
}

/** A part-state file's JSON, or null when it is not one. */
async function readPart(file: string): Promise<PartState | null> {
  try {
    const j = JSON.parse(await fs.readFile(file, "utf8")) as Partial<PartState>;
    const { N, Offset, Size, Completed } = j;
    return [N, Offset, Size, Completed].every((v) => typeof v === "number") ? (j as PartState) : null;
  } catch {
    return null;
  }
}

async function checkBlobs(blobsDir: string, r: StoreReport, sizes: Map<string, number>): Promise<void> {
  const names = await entries(blobsDir);
  const states = new Map<string, PartState[]>();
  for (const n of names) {
    const m = PART_STATE.exec(n);
    if (!m) continue;
    const part = await readPart(path.join(blobsDir, n));
    if (!part) r.problems.push(`${n}: not a part state`);
    else states.set(m[1]!, [...(states.get(m[1]!) ?? []), part]);
  }
  for (const n of names) {
    const file = path.join(blobsDir, n);
    const st = await fs.lstat(file);
    if (PART_STATE.test(n)) {
      if (!names.includes(PART_STATE.exec(n)![1]!)) r.leftovers.push(`${n} (part state without its -partial file)`);
      continue;
    }
    if (!st.isFile()) {
      r.leftovers.push(`${n}${st.isDirectory() ? "/" : ""}`);
      continue;
    }
    const blob = BLOB.exec(n);
    if (blob) {
      const got = await sha256File(file);
      if (got !== `sha256:${blob[1]}`) r.problems.push(`${n} hashes to ${got}`);
      sizes.set(`sha256:${blob[1]}`, st.size);
      r.blobs++;
    } else if (PARTIAL.test(n)) {
      const parts = states.get(n) ?? [];
      const total = parts.reduce((s, p) => s + p.Size, 0);
      if (parts.length === 0 || !validateParts(parts, total) || st.size > total) {
        r.leftovers.push(`${n} (no consistent part states)`);
      } else {
        r.resumable.push(`${n.slice(0, 19)}… ${parts.reduce((s, p) => s + p.Completed, 0)}/${total} B`);
      }
    } else {
      r.leftovers.push(n);
    }
  }
}

/** Files under `dir`, as paths relative to it (directories not listed). */
async function walk(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(dir, rel), { withFileTypes: true }).catch(() => [])) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await walk(dir, r)));
    else out.push(r);
  }
  return out;
}

async function checkManifests(manifestsDir: string, r: StoreReport, sizes: Map<string, number>): Promise<void> {
  for (const rel of await walk(manifestsDir)) {
    const file = path.join(manifestsDir, rel);
    // host/namespace/model/tag, and a tag never starts with "." (temp files do)
    if (rel.split("/").length !== 4 || path.basename(rel).startsWith(".")) {
      r.leftovers.push(`manifests/${rel}`);
      continue;
    }
    try {
      const m = decodeManifest(await fs.readFile(file), file);
      for (const l of [m.config, ...m.layers]) {
        const have = sizes.get(l.digest);
        if (have === undefined) r.problems.push(`manifests/${rel}: layer ${l.digest} missing`);
        else if (have !== l.size) r.problems.push(`manifests/${rel}: layer ${l.digest} is ${have} bytes, manifest says ${l.size}`);
      }
      r.manifests++;
    } catch (e) {
      r.problems.push(`manifests/${rel}: ${(e as Error).message}`);
    }
  }
}

export async function verifyStore(models: string): Promise<StoreReport> {
  const r: StoreReport = { blobs: 0, manifests: 0, resumable: [], leftovers: [], problems: [] };
  const sizes = new Map<string, number>();
  await checkBlobs(path.join(models, "blobs"), r, sizes);
  await checkManifests(path.join(models, "manifests"), r, sizes);
  for (const n of await entries(models)) {
    if (n !== "blobs" && n !== "manifests") r.leftovers.push(n);
  }
  return r;
}
