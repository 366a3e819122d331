// Port of Go's text/template/exec.go. Values follow values.ts: undefined is the invalid
// reflect.Value, null a nil interface{}; pipelines turn a nil interface result into "no value".

import { ExecError } from "./errors.js";
import { formatValue, quote } from "./fmt.js";
import { FuncCtx, FuncDef, FuncError, isTrue, truth } from "./funcs.js";
import { BranchNode, CommandNode, FieldNode, Node, NumberNode, PipeNode, TemplateNode, Tree, VariableNode, nodeString } from "./parser.js";
import { GoFloat, GoStruct, kindOf, lengthOf, mapEntries, mapGet, numberValue, stringerOf, typeName, unwrap, utf8Length } from "./values.js";

export interface ExecEnv {
  trees: ReadonlyMap<string, Tree>;
  text: string;
  parseName: string;
  funcs: Readonly<Record<string, FuncDef>>;
  builtinNames: ReadonlySet<string>;
  /** "zero" is Option("missingkey=zero") (Ollama); "invalid" is the default option. */
  missingKey: "zero" | "invalid";
  /** The most characters the output, or a string a function returns, may hold. */
  maxChars: number;
  ctx: FuncCtx;
}

/** The output of one execution, shared by the templates it calls, measured as it grows. */
class Output {
  readonly parts: string[] = [];
  chars = 0;
}

const MISSING = Symbol("missing");
const BREAK = Symbol("break");
const CONTINUE = Symbol("continue");
export const MAX_EXEC_DEPTH = 100000;

type Final = unknown;

interface Variable {
  name: string;
  value: unknown;
}

type ArgType = "value" | "any" | "string" | null;

export function execute(env: ExecEnv, name: string, data: unknown): string {
  const tree = env.trees.get(name);
  const out = new Output();
  const s: State = new State(env, name, [{ name: "$", value: data }], out, 0);
  if (!tree) s.errorf(`${quote(name)} is an incomplete or empty template`);
  try {
    s.walk(data, tree.root);
  } catch (e) {
    if (e instanceof RangeError && /call stack/.test(e.message)) s.errorf(`exceeded maximum template depth (${MAX_EXEC_DEPTH})`);
    throw e;
  }
  return out.parts.join("");
}

class State {
  node: Node | null = null;
  constructor(
    readonly env: ExecEnv,
    readonly tmpl: string,
    public vars: Variable[],
    readonly out: Output,
    readonly depth: number,
  ) {}

  write(text: string): void {
    this.out.chars += text.length;
    if (this.out.chars > this.env.maxChars) this.tooLong(`the output reached ${this.out.chars} characters`);
    this.out.parts.push(text);
  }

  tooLong(what: string): never {
    this.errorf(`${what}, more than the ${this.env.maxChars} allowed`);
  }

  at(n: Node): void {
    this.node = n;
  }

  errorf(msg: string): never {
    if (!this.node) throw new ExecError(`template: ${this.tmpl}: ${msg}`);
    const text = this.env.text.slice(0, this.node.pos);
    const nl = text.lastIndexOf("\n");
    const col = utf8Length(text.slice(nl + 1));
    const line = 1 + (text.match(/\n/g)?.length ?? 0);
    throw new ExecError(
      `template: ${this.env.parseName}:${line}:${col}: executing ${quote(this.tmpl)} at <${nodeString(this.node)}>: ${msg}`,
    );
  }

  mark(): number {
    return this.vars.length;
  }
  pop(mark: number): void {
    this.vars.length = mark;
  }
  setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) {
        this.vars[i]!.value = value;
        return;
      }
    }
    this.errorf(`undefined variable: ${name}`);
  }
  setTopVar(n: number, value: unknown): void {
    this.vars[this.vars.length - n]!.value = value;
  }
  varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i]!.name === name) return this.vars[i]!.value;
    this.errorf(`undefined variable: ${name}`);
  }

  walk(dot: unknown, node: Node): void {
    this.at(node);
    switch (node.type) {
      case "action": {
        const val = this.evalPipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) this.printValue(node, val);
        return;
      }
      case "break":
        throw BREAK;
      case "continue":
        throw CONTINUE;
      case "comment":
        return;
      case "if":
      case "with":
        return this.walkIfOrWith(dot, node);
      case "list":
        for (const n of node.nodes) this.walk(dot, n);
        return;
      case "range":
        return this.walkRange(dot, node);
      case "template":
        return this.walkTemplate(dot, node);
      case "text":
        this.write(node.text);
        return;
      default:
        this.errorf(`unknown node: ${nodeString(node)}`);
    }
  }

  walkIfOrWith(dot: unknown, n: BranchNode): void {
    const mark = this.mark();
    try {
      const val = this.evalPipeline(dot, n.pipe);
      const [t, ok] = isTrue(val === null ? undefined : val);
      if (!ok) this.errorf(`if/with can't use ${formatValue(val)}`);
      if (t) this.walk(n.type === "with" ? val : dot, n.list);
      else if (n.elseList) this.walk(dot, n.elseList);
    } finally {
      this.pop(mark);
    }
  }

  walkRange(dot: unknown, r: BranchNode): void {
    this.at(r);
    const outer = this.mark();
    try {
      const val = this.evalPipeline(dot, r.pipe);
      const mark = this.mark();
      const decl = r.pipe.decl;
      const oneIteration = (index: unknown, elem: unknown): void => {
        if (decl.length > 0) {
          if (r.pipe.isAssign) this.setVar(decl[0]!.ident[0]!, decl.length > 1 ? index : elem);
          else this.setTopVar(1, elem);
        }
        if (decl.length > 1) {
          if (r.pipe.isAssign) this.setVar(decl[1]!.ident[0]!, elem);
          else this.setTopVar(2, index);
        }
        try {
          this.walk(elem, r.list);
        } catch (e) {
          if (e !== CONTINUE) throw e;
        } finally {
          this.pop(mark);
        }
      };
      const u = unwrap(val);
      switch (kindOf(val)) {
        case "int": {
          if (decl.length > 1) this.errorf(`can't use ${formatValue(val)} to iterate over more than one variable`);
          const n = numberValue(val);
          if (n <= 0) break;
          for (let i = 0; i < n; i++) oneIteration(undefined, i);
          return;
        }
        case "slice":
        case "bytes": {
          const arr = u as ArrayLike<unknown>;
          if (arr.length === 0) break;
          for (let i = 0; i < arr.length; i++) oneIteration(i, arr[i] === undefined ? null : arr[i]);
          return;
        }
        case "map": {
          if (lengthOf(val) === 0) break;
          for (const [k, v] of mapEntries(val)) oneIteration(k, v);
          return;
        }
        case "invalid":
        case "nil":
          break;
        default:
          this.errorf(`range can't iterate over ${formatValue(val)}`);
      }
      if (r.elseList) this.walk(dot, r.elseList);
    } catch (e) {
      if (e !== BREAK) throw e;
    } finally {
      this.pop(outer);
    }
  }

  walkTemplate(dot: unknown, t: TemplateNode): void {
    this.at(t);
    const tree = this.env.trees.get(t.name);
    if (!tree) this.errorf(`template ${quote(t.name)} not defined`);
    if (this.depth >= MAX_EXEC_DEPTH) this.errorf(`exceeded maximum template depth (${MAX_EXEC_DEPTH})`);
    const newDot = this.evalPipeline(dot, t.pipe);
    const s = new State(this.env, t.name, [{ name: "$", value: newDot }], this.out, this.depth + 1);
    s.walk(newDot, tree.root);
  }

  evalPipeline(dot: unknown, pipe: PipeNode | null): unknown {
    if (!pipe) return undefined;
    this.at(pipe);
    let value: unknown = MISSING;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(dot, cmd, value);
      if (value === null) value = undefined; // interface{} nil: dig down to "no value"
    }
    for (const v of pipe.decl) {
      if (pipe.isAssign) this.setVar(v.ident[0]!, value);
      else this.vars.push({ name: v.ident[0]!, value });
    }
    return value;
  }

  notAFunction(args: Node[], final: Final): void {
    if (args.length > 1 || final !== MISSING) this.errorf(`can't give argument to non-function ${nodeString(args[0]!)}`);
  }

  evalCommand(dot: unknown, cmd: CommandNode, final: Final): unknown {
    const first = cmd.args[0]!;
    switch (first.type) {
      case "field":
        return this.evalFieldNode(dot, first, cmd.args, final);
      case "chain":
        this.at(first);
        if (first.node.type === "nil") this.errorf(`indirection through explicit nil in ${nodeString(first)}`);
        return this.evalFieldChain(this.evalArg(dot, null, first.node), first.field, cmd.args, final);
      case "identifier":
        return this.evalFunction(dot, first.ident, first, cmd, cmd.args, final);
      case "pipe":
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, first);
      case "variable":
        return this.evalVariableNode(first, cmd.args, final);
    }
    this.at(first);
    this.notAFunction(cmd.args, final);
    switch (first.type) {
      case "bool":
        return first.value;
      case "dot":
        return dot;
      case "nil":
        this.errorf("nil is not a command");
      case "number":
        return this.idealConstant(first);
      case "string":
        return first.text;
    }
    this.errorf(`can't evaluate command ${JSON.stringify(nodeString(first))}`);
  }

  idealConstant(c: NumberNode): unknown {
    this.at(c);
    if (c.isComplex) this.errorf("complex constants are not supported");
    const hexInt = /^0[xX]/.test(c.text) && !/[pP]/.test(c.text);
    if (c.isFloat && !hexInt && c.text[0] !== "'" && /[.eEpP]/.test(c.text)) {
      return Number.isInteger(c.float64) ? new GoFloat(c.float64) : c.float64;
    }
    if (c.isInt) return Number.isSafeInteger(Number(c.int64)) ? Number(c.int64) : c.int64;
    if (c.isUint) this.errorf(`${c.text} overflows int`);
    return undefined;
  }

  evalFieldNode(dot: unknown, field: FieldNode, args: Node[], final: Final): unknown {
    this.at(field);
    return this.evalFieldChain(dot, field.ident, args, final);
  }

  evalVariableNode(v: VariableNode, args: Node[] | null, final: Final): unknown {
    this.at(v);
    const value = this.varValue(v.ident[0]!);
    if (v.ident.length === 1) {
      this.notAFunction(args ?? [v], final);
      return value;
    }
    return this.evalFieldChain(value, v.ident.slice(1), args, final);
  }

  // Go also threads dot and the node through here for method calls; fields and map keys need neither.
  evalFieldChain(receiver: unknown, ident: string[], args: Node[] | null, final: Final): unknown {
    for (let i = 0; i < ident.length - 1; i++) receiver = this.evalField(ident[i]!, null, MISSING, receiver);
    return this.evalField(ident[ident.length - 1]!, args, final, receiver);
  }

  evalField(fieldName: string, args: Node[] | null, final: Final, receiver: unknown): unknown {
    if (receiver === undefined) return undefined;
    const typ = typeName(receiver);
    if (receiver === null) this.errorf(`nil pointer evaluating ${typ}.${fieldName}`);
    const str = stringerOf(receiver);
    if (str && fieldName === "String") {
      const n = (args ? args.length - 1 : 0) + (final !== MISSING ? 1 : 0);
      if (n !== 0) this.errorf(`wrong number of args for String: want 0 got ${n}`);
      return str();
    }
    const hasArgs = (args?.length ?? 0) > 1 || final !== MISSING;
    const u = unwrap(receiver);
    switch (kindOf(receiver)) {
      case "struct":
        if ((u as GoStruct).hasField(fieldName)) {
          if (hasArgs) this.errorf(`${fieldName} has arguments but cannot be invoked as function`);
          return (u as GoStruct).field(fieldName);
        }
        break;
      case "map": {
        if (hasArgs) this.errorf(`${fieldName} is not a method but has arguments`);
        const { found, value } = mapGet(u, fieldName);
        if (found) return value;
        return this.env.missingKey === "zero" ? null : undefined;
      }
    }
    this.errorf(`can't evaluate field ${fieldName} in type ${typ}`);
  }

  evalFunction(dot: unknown, name: string, ident: Node, cmd: Node, args: Node[] | null, final: Final): unknown {
    this.at(ident);
    const fn = this.env.funcs[name];
    if (!fn) this.errorf(`${JSON.stringify(name)} is not a defined function`);
    return this.evalCall(dot, fn, this.env.builtinNames.has(name), cmd, name, args, final);
  }

  evalCall(dot: unknown, fn: FuncDef, isBuiltin: boolean, node: Node, name: string, argNodes: Node[] | null, final: Final): unknown {
    const args = argNodes ? argNodes.slice(1) : [];
    const numIn = args.length + (final !== MISSING ? 1 : 0);
    let numFixed = args.length;
    if (fn.variadic) {
      numFixed = fn.params.length;
      if (numIn < numFixed) this.errorf(`wrong number of args for ${name}: want at least ${fn.params.length} got ${args.length}`);
    } else if (numIn !== fn.params.length) {
      this.errorf(`wrong number of args for ${name}: want ${fn.params.length} got ${numIn}`);
    }
    if (isBuiltin && (name === "and" || name === "or")) {
      let v: unknown = undefined;
      for (const a of args) {
        v = this.evalArg(dot, "value", a);
        if (truth(v === null ? undefined : v) === (name === "or")) return v;
      }
      if (final !== MISSING) v = this.validateType(final, "value");
      return v;
    }
    const argv: unknown[] = [];
    let i = 0;
    for (; i < numFixed && i < args.length; i++) argv.push(this.evalArg(dot, fn.params[i]!, args[i]!));
    if (fn.variadic) for (; i < args.length; i++) argv.push(this.evalArg(dot, fn.variadic, args[i]!));
    if (final !== MISSING) {
      let t: ArgType = fn.params[fn.params.length - 1] ?? null;
      if (fn.variadic) t = numIn - 1 < numFixed ? fn.params[numIn - 1]! : fn.variadic;
      argv.push(this.validateType(final, t));
    }
    try {
      if (isBuiltin && name === "call") {
        const callee = args.length === 0 ? String(final) : nodeString(args[0]!);
        return this.callFunc(callee, argv);
      }
      const result = fn.fn(argv, this.env.ctx);
      if (typeof result === "string" && result.length > this.env.maxChars) this.tooLong(`${name} returned ${result.length} characters`);
      return result;
    } catch (e) {
      if (e instanceof ExecError || (e !== null && typeof e === "symbol")) throw e;
      this.at(node);
      this.errorf(`error calling ${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  callFunc(callee: string, argv: unknown[]): unknown {
    const [f, ...rest] = argv;
    if (f === undefined || f === null) throw new FuncError("call of nil");
    const fn = unwrap(f);
    if (typeof fn !== "function") throw new FuncError(`non-function ${callee} of type ${typeName(f)}`);
    return (fn as (...a: unknown[]) => unknown)(...rest.map((a) => (a === undefined ? null : a)));
  }

  validateType(value: unknown, typ: ArgType): unknown {
    if (value === undefined) {
      if (typ === null || typ === "value") return undefined;
      if (typ === "any") return null;
      this.errorf("invalid value; expected string");
    }
    if (typ === "string" && typeof value !== "string") {
      this.errorf(`wrong type for value; expected string; got ${typeName(value)}`);
    }
    return value;
  }

  evalArg(dot: unknown, typ: ArgType, n: Node): unknown {
    this.at(n);
    switch (n.type) {
      case "dot":
        return this.validateType(dot, typ);
      case "nil":
        if (typ === "value") return undefined;
        if (typ === "any" || typ === null) return null;
        this.errorf(`cannot assign nil to string`);
      case "field":
        return this.validateType(this.evalFieldNode(dot, n, [n], MISSING), typ);
      case "variable":
        return this.validateType(this.evalVariableNode(n, null, MISSING), typ);
      case "pipe":
        return this.validateType(this.evalPipeline(dot, n), typ);
      case "identifier":
        return this.validateType(this.evalFunction(dot, n.ident, n, n, null, MISSING), typ);
      case "chain":
        return this.validateType(this.evalCommand(dot, { type: "command", pos: n.pos, args: [n] }, MISSING), typ);
    }
    if (typ === "string") {
      if (n.type === "string") return n.text;
      this.errorf(`expected string; found ${nodeString(n)}`);
    }
    switch (n.type) {
      case "bool":
        return n.value;
      case "number":
        return this.idealConstant(n);
      case "string":
        return n.text;
    }
    this.errorf(`can't handle assignment of ${nodeString(n)} to empty interface argument`);
  }

  printValue(n: Node, v: unknown): void {
    this.at(n);
    if (v === undefined) {
      this.write("<no value>");
      return;
    }
    if (kindOf(v) === "func" && !stringerOf(v)) this.errorf(`can't print ${nodeString(n)} of type ${typeName(v)}`);
    this.write(formatValue(v));
  }
}
