// Grammars for `format` inside the runner: node-llama-cpp's generic JSON grammar, or the GBNF the
// backend compiled from a JSON schema (json-schema.ts), cached per text (creating one parses the
// GBNF in llama.cpp).
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { EngineError, INVALID_SCHEMA_PREFIX } from "../errors.js";
import type { GrammarSpec } from "./protocol.js";

const MAX_CACHED = 32;

export interface CompiledGrammar {
  grammar: LlamaGrammar;
  /** Text that ends the output (the generic JSON grammar ends with a run of newlines). */
  stops: string[];
}

function stopStrings(g: LlamaGrammar): string[] {
  const out: string[] = [];
  for (const t of g.stopGenerationTriggers) {
    if (typeof t === "string") out.push(t);
    else if (Array.isArray(t)) {
      if (t.every((x) => typeof x === "string")) out.push(t.join(""));
    } else {
      const s = String(t);
      if (s) out.push(s);
    }
  }
  return out.filter((s) => s.length > 0);
}

export class GrammarCache {
  private readonly cache = new Map<string, Promise<CompiledGrammar>>();

  constructor(private readonly llama: Llama) {}

  get(spec: GrammarSpec): Promise<CompiledGrammar> {
    const key = spec.kind === "json" ? "json" : spec.grammar;
    let p = this.cache.get(key);
    if (p) {
      // Most recently used last.
      this.cache.delete(key);
      this.cache.set(key, p);
      return p;
    }
    p = this.compile(spec);
    p.catch(() => this.cache.delete(key));
    this.cache.set(key, p);
    while (this.cache.size > MAX_CACHED) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
    return p;
  }

  private async compile(spec: GrammarSpec): Promise<CompiledGrammar> {
    if (spec.kind === "json") {
      const grammar = await this.llama.getGrammarFor("json");
      const stops = stopStrings(grammar);
      return { grammar, stops: stops.length > 0 ? stops : ["\n\n\n\n"] };
    }
    try {
      // The grammar ends with the value: the model can only end its turn after it.
      return { grammar: await this.llama.createGrammar({ grammar: spec.grammar }), stops: [] };
    } catch (err) {
      // llama.cpp refuses left recursion: a $ref that reaches itself before any text.
      const why = err instanceof Error ? err.message : String(err);
      throw new EngineError("invalid_schema", `${INVALID_SCHEMA_PREFIX}its grammar does not parse (${why}); a $ref may refer to itself without a value in between`);
    }
  }
}

const caches = new WeakMap<Llama, GrammarCache>();

export function grammarCacheFor(llama: Llama): GrammarCache {
  let c = caches.get(llama);
  if (!c) {
    c = new GrammarCache(llama);
    caches.set(llama, c);
  }
  return c;
}
