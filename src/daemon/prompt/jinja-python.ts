// Python Jinja2 semantics for the Jinja engine (@huggingface/jinja), installed once at import the way
// jinja-bounds.ts installs its limits: by wrapping engine methods, never forking it. This module
// prints values, looks up members, evaluates literals and sets transformers' globals; methods,
// tests, filters, operators and statements each have a module of their own (jinja-*.ts). Chat templates
// are written for transformers' apply_chat_template (Python Jinja2), and a model was trained on what
// that prints, so where the engine differs (str() of a dict, True, dict literals with int keys, filters
// and str/list/dict methods it lacks, loops over undefined) Python's behaviour is what we want.
// Where Python itself raises and llama.cpp's engine renders (a string plus undefined, list.append
// under the immutable sandbox), the render follows llama.cpp: a real engine would not fail there.
import { Environment, Interpreter } from "@huggingface/jinja";
import { is, isDict, isList, isMissing, isStr, NamespaceClass, pyStr, V, type RValue } from "./jinja-values.js";
import { boundedRange } from "./jinja-bounds.js";
import { pyStrftime } from "./strftime.js";
import { SCOPED_BLOCK, TUPLE_FN } from "./jinja-syntax.js";
import { fn, iterate, keyOf, pre, PRE, proto, splitArgs, str, tuple, undef, type Interp, type Node } from "./jinja-runtime.js";
import { DICT_METHODS } from "./jinja-methods.js";
import { bind, LOOP_BODY, renderLoopBody } from "./jinja-statements.js";
// installed at import, each wrapping engine methods of its own
import "./jinja-tests.js";
import "./jinja-filters.js";
import "./jinja-operators.js";

/** What a template raised with raise_exception(): its own words, for the 400 it becomes. */
export class TemplateRaised extends Error {}

/* eslint-disable @typescript-eslint/no-explicit-any */

// ----- printing: Python's str() where the engine printed JavaScript's -----

for (const cls of [V.Boolean, V.Float, V.Array, V.Object, NamespaceClass]) {
  (cls.prototype as RValue).toString = function (this: RValue) {
    return pyStr(this);
  };
}

// ----- member access, dict literals, evaluation -----

const engineMember = proto.evaluateMemberExpression;
proto.evaluateMemberExpression = function (this: Interp, node: Node, env: Environment) {
  if (!node.computed && node.property.type === "Identifier" && DICT_METHODS.has(node.property.value)) {
    const object: RValue = this.evaluate(node.object, env);
    const method = isDict(object) && !is(object, NamespaceClass) ? (object.builtins as Map<string, RValue>).get(node.property.value) : undefined;
    return method ?? engineMember.call(this, { ...node, object: pre(object) }, env);
  }
  if (!node.computed || node.property.type === "SliceExpression") return engineMember.call(this, node, env);
  const object: RValue = this.evaluate(node.object, env);
  const property: RValue = this.evaluate(node.property, env);
  // d[512] on a dict literal with int keys
  if (isDict(object) && !isStr(property)) return object.value.get(keyOf(property)) ?? undef();
  // the common lookups without a copied node (a template that looks back from every message
  // makes them in a quadratic loop): messages[i], m['role']
  if (isList(object) && is(property, V.Integer)) return object.value.at(property.value) ?? undef();
  if (isDict(object)) {
    const v: RValue | undefined = object.value.get(property.value);
    if (v !== undefined) return v;
  }
  return engineMember.call(this, { ...node, object: pre(object), property: pre(property) }, env);
};

const engineEvaluate = proto.evaluate;
proto.evaluate = function (this: Interp, node: Node, env: Environment) {
  if (node?.type === PRE) return node.value;
  if (node?.type === LOOP_BODY) return renderLoopBody.call(this, node, env);
  if (node?.type === SCOPED_BLOCK) {
    // {% with a = x %}: values from the outer scope, bound in an inner one that the block's own sets stay in.
    const values = node.sets.map((s: Node) => this.evaluate(s.value, env) as RValue);
    const scope = new Environment(env);
    node.sets.forEach((s: Node, i: number) => bind(s.assignee, values[i], scope));
    return str(this.renderBlock(node.body, scope));
  }
  if (node?.type === "ObjectLiteral") {
    // Python allows any hashable key; ByteDance Seed-OSS's template keys a dict by ints.
    const map = new Map<unknown, RValue>();
    for (const [k, v] of node.value as Map<Node, Node>) map.set(keyOf(this.evaluate(k, env)), this.evaluate(v, env));
    return new V.Object(map);
  }
  const result = engineEvaluate.call(this, node, env);
  if (node?.type === "TupleLiteral") result.type = "ArrayValue";
  return result;
};

// ----- globals: what transformers gives a template -----

/** Jinja2's cycler(*items): next() steps through them, current is the one next() gives. */
function cycler(items: RValue[]): RValue {
  const self = new V.Object(new Map());
  let i = 0;
  const set = () => self.value.set("current", items[i] ?? undef());
  self.value.set("next", fn(() => {
    const v = items[i] ?? undef();
    i = (i + 1) % Math.max(1, items.length);
    set();
    return v;
  }));
  self.value.set("reset", fn(() => ((i = 0), set(), new V.Null())));
  set();
  return self;
}

/** Renders a parsed template with Jinja2's and transformers' globals, then the context. */
export function renderWithGlobals(parsed: unknown, context: Record<string, unknown>): string {
  const env = new Environment();
  for (const [k, v] of [["true", true], ["false", false], ["none", null], ["True", true], ["False", false], ["None", null]] as const) env.set(k, v);
  env.setVariable("raise_exception", fn((a) => {
    throw new TemplateRaised(pyStr(a[0] ?? str("")));
  }) as never);
  env.setVariable("strftime_now", fn((a) => str(pyStrftime(new Date(), pyStr(a[0] ?? str(""))))) as never);
  env.setVariable("dict", fn((a) => {
    const [args, kw] = splitArgs(a);
    const from = args[0];
    const m = new Map<unknown, RValue>(!from || isMissing(from) ? [] : isDict(from) ? from.value : iterate(from, "dict").map((p) => {
      const pair = iterate(p, "dict");
      if (pair.length !== 2) throw new Error(`dictionary update sequence element has length ${pair.length}; 2 is required`);
      return [keyOf(pair[0]!), pair[1]!];
    }));
    for (const [k, v] of kw) m.set(k, v);
    return new V.Object(m);
  }) as never);
  env.set("range", boundedRange);
  env.setVariable(TUPLE_FN, fn((a) => tuple(a)) as never);
  env.setVariable("cycler", fn((a) => cycler(a)) as never);
  env.setVariable("joiner", fn((a) => {
    let used = false;
    const sep = pyStr(a[0] ?? str(", "));
    return fn(() => str(used ? sep : ((used = true), "")));
  }) as never);
  for (const [k, v] of Object.entries(context)) if (v !== undefined) env.set(k, v);
  return (new Interpreter(env).run(parsed as never) as unknown as RValue).value;
}
