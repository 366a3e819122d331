// Case K of a run seeded S, from (S, K) alone: a mutated GGUF file sent through blobs + create
// (+ a short generate or chat, and show, when create accepts it), or one mutated request to one
// route (after the requests that route needs first).
import { createHash } from "node:crypto";
import { contentLength, mutateRequest } from "./body-mutate.js";
import type { GgufDoc } from "./gguf-doc.js";
import { mutateGguf } from "./gguf-mutate.js";
import type { Request } from "./http.js";
import { toJsonText, type JsonTree } from "./json-text.js";
import { LOAD_ERROR, REGISTRY_ERROR, type Step } from "./oracles.js";
import { caseRng, type Rng } from "./prng.js";
import { remoteSafe, ROUTES, type Fixtures } from "./routes.js";

export type CaseKind = "gguf" | "request";

export interface CasePlan {
  k: number;
  kind: CaseKind;
  /** "gguf" or the route ("POST /api/chat"). */
  title: string;
  edits: string[];
  steps: Step[];
  /** Blob digests the case uploads (removed from our store afterwards). */
  uploads: Set<string>;
  /** The case may leave a runner loaded with other options or keep_alive. */
  touchesRunner: boolean;
}

/** Share of GGUF cases; the rest are requests. */
const GGUF_SHARE = 0.3;

/** Options that load the model again with other settings (the next case would inherit them). */
const RUNNER_KEYS = /"(num_ctx|num_batch|num_gpu|main_gpu|num_thread|use_mmap|numa|low_vram)"/;

function sha256(b: Buffer): string {
  return `sha256:${createHash("sha256").update(b).digest("hex")}`;
}

function json(method: string, path: string, body: JsonTree): Request {
  const text = Buffer.from(toJsonText(body));
  return { method, path, headers: { "content-type": "application/json", "content-length": String(text.length) }, body: text };
}

function ggufPlan(rng: Rng, k: number, base: GgufDoc): CasePlan {
  const m = mutateGguf(rng, base);
  const digest = sha256(m.bytes);
  const model = `fuzz-g${k}`;
  const steps: Step[] = [
    { label: "upload", req: { method: "POST", path: `/api/blobs/${digest}`, headers: { "content-length": String(m.bytes.length) }, body: m.bytes } },
    { label: "create", onlyIfOk: true, req: json("POST", "/api/create", { model, files: { "model.gguf": digest }, stream: false }) },
  ];
  // keep_alive 0: the crafted model's runner goes as soon as it answered; an embedding model's
  // (a pooling type in the base) is run by embedding
  const embeds = base.kvs.some((e) => e.key.toString("utf8").endsWith(".pooling_type"));
  const run = embeds ? "embed" : rng.pick(["generate", "chat"] as const);
  steps.push({
    label: run,
    onlyIfOk: true,
    designed5xx: LOAD_ERROR,
    req: run === "embed"
      ? json("POST", "/api/embed", { model, input: ["hi", "hello there"], keep_alive: 0 })
      : run === "generate"
        ? json("POST", "/api/generate", { model, prompt: "hi", stream: false, keep_alive: 0, options: { num_predict: 2 } })
        : json("POST", "/api/chat", { model, messages: [{ role: "user", content: "hi" }], stream: false, keep_alive: 0, options: { num_predict: 2 } }),
  });
  if (rng.chance(0.3)) steps.push({ label: "show", onlyIfOk: true, req: json("POST", "/api/show", { model, verbose: true }) });
  return { k, kind: "gguf", title: "gguf", edits: m.edits, steps, uploads: new Set([digest]), touchesRunner: true };
}

const DIGEST_FORMS = (hex: string): string[] => [
  `sha256:${hex}`, `sha256-${hex}`, `sha256:${hex.toUpperCase()}`, `sha256:${hex}00`, `sha256:${hex.slice(1)}`, `md5:${hex.slice(0, 32)}`,
  "sha256:xyz", "..%2f..%2fetc%2fpasswd", "%00", `sha256:${"0".repeat(64)}`, "sha512:" + hex + hex,
];

/** POST/HEAD/GET /api/blobs/:digest with matching, mismatching and malformed digests. */
function blobPlan(rng: Rng, k: number, fx: Fixtures): CasePlan {
  const body = rng.pick([Buffer.alloc(0), rng.bytes(rng.pick([1, 1000, 1 << 20])), Buffer.from("GGUF")]);
  const own = sha256(body).slice(7);
  const other = sha256(rng.bytes(8)).slice(7);
  const choice = rng.int(5);
  const edits: string[] = [];
  let req: Request;
  if (choice <= 1) {
    const digest = choice === 0 ? `sha256:${own}` : rng.pick(DIGEST_FORMS(rng.chance(0.5) ? own : other));
    req = { method: "POST", path: `/api/blobs/${digest}`, headers: { "content-length": String(body.length) }, body };
    edits.push(`POST ${body.length} bytes to ${digest.slice(0, 80)}${digest.includes(own) ? "" : " (not their digest)"}`);
  } else if (choice === 2) {
    req = { method: "POST", path: `/api/blobs/${fx.baseBlob}`, headers: { "content-length": String(body.length) }, body };
    edits.push(`POST ${body.length} bytes to the digest of a blob the store has (not theirs)`);
  } else {
    const method = rng.pick(["HEAD", "GET", "DELETE", "PUT"]);
    const digest = rng.chance(0.4) ? fx.baseBlob : rng.pick(DIGEST_FORMS(other));
    req = { method, path: `/api/blobs/${digest}`, headers: {} };
    edits.push(`${method} ${digest.slice(0, 80)}`);
  }
  if (rng.chance(0.2)) {
    req.headers["content-type"] = rng.pick(["application/json", "text/plain", "multipart/form-data; boundary=x"]);
    edits.push(`content-type ${req.headers["content-type"]}`);
  }
  return { k, kind: "request", title: `${req.method} /api/blobs`, edits, steps: [{ label: "request", req }], uploads: new Set([`sha256:${own}`]), touchesRunner: false };
}

/** The request asks for much work: an unbounded or long generation (num_predict/max_tokens < 0
 *  or > 64) or more than 64 embeddings. */
function asksLong(text: string): boolean {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return false;
  }
  if (!v || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  const opts = o.options && typeof o.options === "object" ? (o.options as Record<string, unknown>) : {};
  for (const n of [opts.num_predict, o.max_tokens, o.max_completion_tokens, o.max_output_tokens]) {
    if (typeof n === "number" && (n < 0 || n > 64 || !Number.isFinite(n))) return true;
  }
  return Array.isArray(o.input) && o.input.length > 64;
}

function requestPlan(rng: Rng, k: number, fx: Fixtures): CasePlan {
  if (rng.chance(0.06)) return blobPlan(rng, k, fx);
  const route = rng.pick(ROUTES);
  const valid = route.body?.(rng, fx);
  const { req, edits } = mutateRequest(rng, route.method, route.path, valid);
  if (req.tree !== undefined) remoteSafe(route.path, req.tree, fx);
  let body: Buffer | undefined = req.tree !== undefined ? Buffer.from(toJsonText(req.tree)) : undefined;
  if (req.text) {
    let parsed: JsonTree | undefined;
    try {
      parsed = JSON.parse(req.text.toString("utf8")) as JsonTree;
    } catch {
      // not JSON: names nothing
    }
    // damaged text that names another registry is not sent: the undamaged request is
    if (parsed !== undefined && remoteSafe(route.path, parsed, fx)) edits.push("(text edit dropped: it named another registry)");
    else body = req.text;
  }
  const headers = { ...req.headers };
  if (req.lengthLie) headers["content-length"] = String(contentLength(req.lengthLie, body?.length ?? 0));
  else if (body && headers["transfer-encoding"] === undefined) headers["content-length"] = String(body.length);
  const text = body?.toString("utf8") ?? "";
  const registry = route.changesModels === true && route.path !== "/api/copy" && route.path !== "/api/delete";
  const steps: Step[] = (route.setup?.(fx) ?? []).map((s) => ({ label: `setup ${s.method} ${s.path}`, req: json(s.method, s.path, s.body) }));
  steps.push({
    label: "request",
    req: { method: req.method, path: req.path, headers, ...(body ? { body } : {}) },
    ...(registry ? { designed5xx: REGISTRY_ERROR } : {}),
    ...(route.inference && asksLong(text) ? { mayRunLong: true } : {}),
  });
  const uploads = new Set<string>();
  return { k, kind: "request", title: `${route.method} ${route.path}`, edits, steps, uploads, touchesRunner: RUNNER_KEYS.test(text) };
}

/** The plan of case `k` in the run seeded `seed`. */
export function planCase(seed: number, k: number, fx: Fixtures, base: GgufDoc): CasePlan {
  const rng = caseRng(seed, k);
  return rng.chance(GGUF_SHARE) ? ggufPlan(rng, k, base) : requestPlan(rng, k, fx);
}

