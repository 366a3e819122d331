// Grammars for `format` inside the runner: node-llama-cpp's generic JSON grammar, or a JSON
// schema compiled to GBNF by json-schema-grammar.ts, cached per schema (creating one parses the
// GBNF in llama.cpp).
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { INVALID_SCHEMA_PREFIX, type GrammarSpec } from "../backend.js";
import { InvalidSchemaError } from "./gbnf.js";
import { jsonSchemaGrammar } from "./json-schema-grammar.js";

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
    const key = spec.kind === "json" ? "json" : JSON.stringify(spec.schema);
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
    let text: string;
    try {
      text = jsonSchemaGrammar(spec.schema);
    } catch (err) {
      if (err instanceof InvalidSchemaError) throw new Error(INVALID_SCHEMA_PREFIX + err.message);
      // A stack overflow on a pathological schema is the schema's fault, not the runner's.
      if (err instanceof RangeError) throw new Error(`${INVALID_SCHEMA_PREFIX}the schema is too complex to compile (${err.message})`);
      throw err;
    }
    try {
      // The grammar ends with the value: the model can only end its turn after it.
      return { grammar: await this.llama.createGrammar({ grammar: text }), stops: [] };
    } catch (err) {
      // llama.cpp refuses left recursion: a $ref that reaches itself before any text.
      throw new Error(`${INVALID_SCHEMA_PREFIX}its grammar does not parse (${err instanceof Error ? err.message : String(err)}); a $ref may refer to itself without a value in between`);
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
