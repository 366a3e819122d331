// Prefix affinity: a request is described by hashes of its growing prefixes (each message
// boundary of a conversation; fixed-size blocks of a prompt), and the router remembers which
// replica last served each one. A follow-up turn or a request with a shared system prompt then
// finds the replica that already holds its KV cache (what the cache-aware routers of vLLM's
// production stack, llm-d and SGLang do, at message granularity instead of tokens).
import { createHash } from "node:crypto";
import { isPromptJob, type GenerateJob } from "../backend.js";

const PROMPT_BLOCK = 256; // characters per prefix block of a raw prompt
const MAX_KEYS = 64;

/** Prefix hashes, shortest prefix first; chained, so each names everything before it too. */
export function prefixKeys(job: GenerateJob): string[] {
  const parts: string[] = [];
  if (isPromptJob(job)) {
    for (let i = PROMPT_BLOCK; i <= job.prompt.length; i += PROMPT_BLOCK) parts.push(job.prompt.slice(i - PROMPT_BLOCK, i));
  } else {
    // The tools are part of what an engine puts first in the prompt.
    if (job.tools?.length) parts.push(`tools\0${JSON.stringify(job.tools)}`);
    for (const m of job.messages) parts.push(`${m.role}\0${m.content}\0${m.tool_calls ? JSON.stringify(m.tool_calls) : ""}`);
  }
  const keys: string[] = [];
  let h = "";
  for (const p of parts.slice(0, MAX_KEYS)) {
    h = createHash("sha1").update(h).update("\u0001").update(p).digest("base64url");
    keys.push(h);
  }
  return keys;
}

/** prefix hash → replica index, least recently used forgotten first. */
export class AffinityTable {
  private readonly map = new Map<string, number>();

  constructor(private readonly capacity = 50_000) {}

  /** The replica that served the longest known prefix, and how many prefixes matched. */
  lookup(keys: readonly string[]): { replica: number; depth: number } | undefined {
    for (let i = keys.length - 1; i >= 0; i--) {
      const r = this.map.get(keys[i] as string);
      if (r !== undefined) return { replica: r, depth: i + 1 };
    }
    return undefined;
  }

  record(keys: readonly string[], replica: number): void {
    for (const k of keys) {
      this.map.delete(k);
      this.map.set(k, replica);
    }
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
  }
}
