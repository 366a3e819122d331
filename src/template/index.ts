// Public API of the Go text/template interpreter used for Ollama model templates.
//
// parseTemplate() parses like template.New(name).Option("missingkey=zero").Funcs(ollamaFuncs).Parse(text).
// execute() renders like Template.Execute; errors carry Go's messages.
//
// missingkey=zero: Ollama parses with Option("missingkey=zero"). For a map[string]interface{}
// (the data Ollama passes, and every plain JS object here) a missing key yields
// reflect.Zero(interface{}) — a nil interface — which the pipeline then unwraps to an invalid
// value, so `{{ .Missing }}` prints "<no value>", exactly as Go does (the option only changes
// the result for maps with concrete element types). The differences from the default option
// are visible elsewhere: `{{ print .Missing }}` prints "<nil>" either way, but `{{ .Missing.Field }}`
// is an error ("nil pointer evaluating interface {}.Field") under missingkey=zero whereas the
// default yields "<no value>". Both behaviours are available via ExecuteOptions.missingKey.

import { TemplateError } from "./errors.js";
import { ExecEnv, execute as run } from "./exec.js";
import { BUILTINS, FuncDef, OLLAMA_FUNCS } from "./funcs.js";
import { ListNode, Node, Tree, parseTrees } from "./parser.js";

export { TemplateError, ParseError, ExecError } from "./errors.js";
export { GoFloat, GoNamed, GoStruct, jsonPrintable, fromJSON, marshalJSON } from "./values.js";
export type { StructType, StructField, NamedOptions } from "./values.js";
export { sprint, sprintln, formatValue } from "./fmt.js";
export { sprintf } from "./printf.js";
export { nodeString } from "./parser.js";
export type { Node, ListNode, Tree } from "./parser.js";
export * as ast from "./parser.js";

export interface ExecuteOptions {
  /** The most characters the output, or any string a function returns, may hold (default: no
   *  bound); past it execution stops with an ExecError. */
  maxChars?: number;
  /** Clock for currentDate/yesterdayDate (default: new Date()). */
  now?: () => Date;
  /** "zero" (default, Ollama's option) or "invalid" (Go's default option). */
  missingKey?: "zero" | "invalid";
}

export interface Template {
  readonly name: string;
  readonly text: string;
  /** All trees: the main one (under `name`) and every {{define}}/{{block}}. */
  readonly trees: ReadonlyMap<string, Tree>;
  /** Root of the main template. */
  readonly root: ListNode;
  execute(data: unknown, opts?: ExecuteOptions): string;
  /**
   * True if a field or variable chain anywhere in the template names `field`
   * (".Messages", "Tools", ".Function.Arguments"; case-insensitive like Ollama's Vars()).
   */
  references(field: string): boolean;
  /** Ollama's Template.Vars(): every field/variable identifier, lowercased, sorted, unique. */
  identifiers(): string[];
}

export const TEMPLATE_FUNCS: Readonly<Record<string, FuncDef>> = { ...BUILTINS, ...OLLAMA_FUNCS };
const BUILTIN_NAMES: ReadonlySet<string> = new Set(Object.keys(BUILTINS));

/** Parses a template with Go's builtins plus Ollama's json/currentDate/yesterdayDate/toTypeScriptType. */
export function parseTemplate(text: string, name = ""): Template {
  const trees = parseTrees(name, text, (fn) => Object.prototype.hasOwnProperty.call(TEMPLATE_FUNCS, fn));
  return templateFromTrees(trees, text, name, TEMPLATE_FUNCS);
}

/** Builds a Template over already parsed (possibly rewritten) trees. */
export function templateFromTrees(
  trees: ReadonlyMap<string, Tree>,
  text: string,
  name: string,
  funcs: Readonly<Record<string, FuncDef>> = TEMPLATE_FUNCS,
): Template {
  const root = trees.get(name)?.root ?? { type: "list", pos: 0, nodes: [] };
  return {
    name,
    text,
    trees,
    root,
    execute(data: unknown, opts: ExecuteOptions = {}): string {
      const env: ExecEnv = {
        trees,
        text,
        parseName: name,
        funcs,
        builtinNames: BUILTIN_NAMES,
        missingKey: opts.missingKey ?? "zero",
        maxChars: opts.maxChars ?? Infinity,
        ctx: { now: opts.now ?? (() => new Date()) },
      };
      return run(env, name, data);
    },
    identifiers(): string[] {
      const set = new Set<string>();
      for (const t of trees.values()) for (const id of identifiersOf(t.root, false)) set.add(id.toLowerCase());
      return [...set].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    },
    references(field: string): boolean {
      const want = field.replace(/^\./, "").toLowerCase().split(".");
      for (const t of trees.values()) {
        for (const chain of chains(t.root)) {
          const ids = chain.map((s) => s.toLowerCase());
          for (let i = 0; i + want.length <= ids.length; i++) {
            if (want.every((w, j) => ids[i + j] === w)) return true;
          }
        }
      }
      return false;
    },
  };
}

/**
 * Ollama's template.Identifiers: field and variable idents reachable through lists, actions,
 * branch pipelines/bodies, template-call pipelines and command arguments (not through chains).
 * strict: a {{template}} without a pipeline is the error "undefined template specified".
 */
export function identifiersOf(n: Node, strict: boolean): string[] {
  return chains(n, strict).flat();
}

function chains(n: Node, strict = false): string[][] {
  switch (n.type) {
    case "list":
      return n.nodes.flatMap((c) => chains(c, strict));
    case "template":
      if (!n.pipe) {
        if (strict) throw new TemplateError("undefined template specified");
        return [];
      }
      return chains(n.pipe, strict);
    case "action":
      return chains(n.pipe, strict);
    case "if":
    case "range":
    case "with":
      return [
        ...chains(n.pipe, strict),
        ...chains(n.list, strict),
        ...(n.elseList ? chains(n.elseList, strict) : []),
      ];
    case "pipe":
      return n.cmds.flatMap((c) => c.args.flatMap((a) => chains(a, strict)));
    case "field":
    case "variable":
      return [n.ident];
    default:
      return [];
  }
}
