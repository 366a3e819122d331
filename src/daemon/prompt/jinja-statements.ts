// Loops, macros, set blocks and block output as Jinja2 runs them: what an iteration printed before
// `{% break %}`/`{% continue %}` kept, for-else, recursive loops, loop.cycle/changed/depth, a
// macro's varargs as a tuple, `{% set %}…{% endset %}` scoped, and None printed where Python prints it.
import { Environment, Interpreter } from "@huggingface/jinja";
import { is, isDict, isList, isStr, pyEquals, V, type RValue } from "./jinja-values.js";
import { type Node, type Interp, type Kwargs, proto, fn, undef, str, tuple, pre, iterate } from "./jinja-runtime.js";
import { compileJinja } from "./jinja-syntax.js";

// loop.cycle(...), loop.changed(...), loop.depth: what Jinja2's loop has and the engine's lacks.
// changed() compares with the same loop's last call, so each running loop keeps its own record.
interface RunningLoop {
  last?: RValue[];
  node?: Node;
  env?: Environment;
  depth: number;
  /** The iteration whose `loop` was last made: cycle() reads it. */
  iteration?: number;
  /** cycle, changed, depth and depth0, made once a loop. */
  extras?: Array<[string, RValue]>;
}
const runningLoops: RunningLoop[] = [];
const LoopClass = (() => {
  let loop: RValue | undefined;
  const env = new Environment();
  env.setVariable("f", new V.Function((args: RValue[]) => ((loop = args[0]), new V.Null())) as never);
  new Interpreter(env).run(compileJinja("{% for i in [1] %}{{ f(loop) }}{% endfor %}").parsed as never);
  return loop!.constructor as { prototype: Record<string, unknown> };
})();
const engineEntries = LoopClass.prototype.createEntries as (this: RValue) => Map<string, RValue>;
LoopClass.prototype.createEntries = function (this: RValue & { iteration: number }) {
  const entries = engineEntries.call(this);
  const state: RunningLoop = runningLoops.at(-1) ?? { depth: 1 };
  state.iteration = this.iteration;
  state.extras ??= [
    ["cycle", fn((a) => {
      if (a.length === 0) throw new Error("no items for cycling given");
      return a[state.iteration! % a.length]!;
    })],
    ["changed", fn((a) => {
      const same = state.last !== undefined && state.last.length === a.length && a.every((x, k) => pyEquals(x, state.last![k]!));
      state.last = a;
      return new V.Boolean(!same);
    })],
    ["depth", new V.Integer(state.depth)],
    ["depth0", new V.Integer(state.depth - 1)],
  ];
  for (const [name, v] of state.extras) entries.set(name, v);
  return entries;
};

// A macro's varargs is a tuple in Python.
const engineBind = proto.bindMacroArguments;
proto.bindMacroArguments = function (this: Interp, ...args: [unknown, unknown, Set<string>, unknown, Environment]) {
  const result = engineBind.apply(this, args);
  const scope = args[4];
  if (args[2].has("varargs")) {
    const v = scope.lookupVariable("varargs") as unknown as RValue;
    scope.setVariable("varargs", tuple(v.value) as never);
  }
  return result;
};

const engineFor = proto.renderFor;
proto.renderFor = function (this: Interp, node: Node, env: Environment, depth = 1) {
  runningLoops.push({ node, env, depth });
  try {
    return renderForPython.call(this, node, env);
  } finally {
    runningLoops.pop();
  }
};

// `{% for x in tree recursive %}…{{ loop(x.children) }}`: the call renders the same loop over the
// children, one level deeper, in the scope the loop started in.
const engineCall = proto.evaluateCallExpression;
proto.evaluateCallExpression = function (this: Interp, node: Node, env: Environment) {
  if (node.callee.type !== "Identifier" || node.callee.value !== "loop") return engineCall.call(this, node, env);
  const running = runningLoops.at(-1);
  const callee: RValue = this.evaluate(node.callee, env);
  if (!(callee instanceof (LoopClass as unknown as new () => RValue)) || !running?.node?.recursive) return engineCall.call(this, { ...node, callee: pre(callee) }, env);
  const [args] = this.evaluateArguments(node.args, env) as [RValue[], Kwargs];
  const items = args[0] ?? undef();
  return str(proto.renderFor.call(this, { ...running.node, iterable: pre(items) }, running.env!, running.depth + 1));
};
const renderForPython = function (this: Interp, node: Node, env: Environment) {
  const select = node.iterable.type === "SelectExpression";
  const expr = select ? node.iterable.lhs : node.iterable;
  let iterable: RValue = this.evaluate(expr, env);
  // Python iterates undefined as nothing and a string by characters.
  if (is(iterable, V.Undefined) || isStr(iterable)) iterable = new V.Array(iterate(iterable, "for"));
  // `for a, b in` unpacks each item as Python iterates it: a dict's keys, a string's characters
  if (node.loopvar.type === "TupleLiteral" && isList(iterable)) {
    iterable = new V.Array((iterable.value as RValue[]).map((item) => (isDict(item) || isStr(item) ? new V.Array(iterate(item, "for")) : item)));
  }
  const replaced = select ? { ...node.iterable, lhs: pre(iterable) } : pre(iterable);
  const body = { type: LOOP_BODY, body: node.body, broken: false, completed: false };
  const out: string = engineFor.call(this, { ...node, iterable: replaced, body: [body], defaultBlock: [] }, env);
  // Jinja2's `else` runs unless some iteration ran to its end (one that breaks or continues does not)
  return body.completed || !node.defaultBlock?.length ? out : out + this.renderBlock(node.defaultBlock, new Environment(env));
};

// {% break %} and {% continue %}: the engine drops what an iteration printed before them; Python keeps it.
// Each block a control passes through adds what it printed (renderBlock below), and the loop body
// returns it; after a break the engine's loop runs on over bodies that print nothing.
export const LOOP_BODY = "OllamatsLoopBody";
const [BreakClass, ContinueClass] = (["Break", "Continue"] as const).map((type) => {
  try {
    proto.evaluate.call(Object.create(proto), { type }, new Environment());
  } catch (err) {
    return (err as Error).constructor;
  }
  throw new Error(`the Jinja engine no longer throws on ${type}`);
}) as [new () => Error, new () => Error];
const isControl = (err: unknown): err is Error & { partial?: string } => err instanceof BreakClass || err instanceof ContinueClass;
export function renderLoopBody(this: Interp, node: Node, env: Environment): RValue {
  if (node.broken) return str("");
  try {
    // each iteration's sets are its own: Jinja2 starts every iteration from the scope the loop began in
    const out = str(this.renderBlock(node.body, new Environment(env)));
    node.completed = true;
    return out;
  } catch (err) {
    if (!isControl(err)) throw err;
    if (err instanceof BreakClass) node.broken = true;
    return str(err.partial ?? "");
  }
}

/** `{% set a, b = … %}` binding: a name, or names unpacked from a sequence. */
export function bind(target: Node, v: RValue, scope: Environment): void {
  if (target.type === "Identifier") scope.setVariable(target.value, v as never);
  else (target.value as Node[]).forEach((t, i) => scope.setVariable(t.value, (v.value[i] ?? undef()) as never));
}

// `{% set v %}…{% endset %}`: the body renders in a scope of its own, as in Jinja2 (its sets stay inside).
const engineSet = proto.executeSet;
proto.executeSet = function (this: Interp, node: Node, env: Environment) {
  if (node.value || !node.body) return engineSet.call(this, node, env);
  let text: string;
  try {
    text = this.renderBlock(node.body, new Environment(env));
  } catch (err) {
    // a break out of the block: what it captured was the variable's, never the output's
    if (isControl(err)) err.partial = undefined;
    throw err;
  }
  return engineSet.call(this, { ...node, value: pre(str(text)), body: undefined }, env);
};

// `{{ none }}` and `{{ items.append(x) }}` print "None" in Python; the engine printed nothing.
// Only expressions print: a statement (`{% macro %}`, `{% call %}`) that evaluates to null does not.
const PRINTED = new Set(["Identifier", "MemberExpression", "CallExpression", "FilterExpression", "TestExpression", "Ternary", "SelectExpression", "BinaryExpression", "UnaryExpression"]);
const engineBlock = proto.renderBlock;
proto.renderBlock = function (this: Interp, statements: Node[], env: Environment): string {
  let out = "";
  try {
    for (const s of statements) {
      if (PRINTED.has(s?.type)) {
        const v: RValue = this.evaluate(s, env);
        if (!is(v, V.Undefined)) out += is(v, V.Null) ? "None" : v.toString();
      } else out += engineBlock.call(this, [s], env);
    }
  } catch (err) {
    if (isControl(err)) err.partial = out + (err.partial ?? "");
    throw err;
  }
  return out;
};
