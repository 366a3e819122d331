// Grammars for `format` inside the runner: node-llama-cpp's generic JSON grammar or a JSON
// schema compiled to GBNF, cached per schema (compiling parses the GBNF in llama.cpp).
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { EngineError, INVALID_SCHEMA_PREFIX } from "../errors.js";
import type { GrammarSpec } from "./protocol.js";

const MAX_CACHED = 32;

export interface CompiledGrammar {
  grammar: LlamaGrammar;
  /** Text that ends the output (the grammars end with a run of newlines). */
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

/**
 * node-llama-cpp's number rules allow exponents of up to 16 digits: an "integer" may come out as
 * `1e-5` or `3e+4040404040404043` (Infinity), which no longer validates. Integers get no exponent
 * (and at most 15 digits, so they stay exact); other numbers a two-digit exponent.
 */
export function patchNumberRules(gbnf: string): string {
  return gbnf
    .replace(/^integer-number-rule ::= .*$/m, 'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,14})')
    .replace(/^fractional-number-rule ::= .*$/m, 'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? ("0" | [1-9] [0-9]?))?');
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
    let grammar: LlamaGrammar;
    if (spec.kind === "json") grammar = await this.llama.getGrammarFor("json");
    else {
      try {
        const base = await this.llama.createGrammarForJsonSchema(spec.schema as never);
        const text = patchNumberRules(base.grammar);
        grammar =
          text === base.grammar
            ? base
            : await this.llama.createGrammar({ grammar: text, stopGenerationTriggers: base.stopGenerationTriggers, trimWhitespaceSuffix: true });
      } catch (err) {
        throw new EngineError("invalid_schema", INVALID_SCHEMA_PREFIX + (err instanceof Error ? err.message : String(err)));
      }
    }
    const stops = stopStrings(grammar);
    return { grammar, stops: stops.length > 0 ? stops : ["\n\n\n\n"] };
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
