// Port of Go's text/template/parse/parse.go + node.go. Produces the same tree shapes (minus the
// Tree back-pointers) and the same error messages: "template: NAME:LINE: MESSAGE".

import { Item, ItemType, itemString, lex } from "./lexer.js";
import { ParseError } from "./errors.js";
import { parseNumber, unquote } from "./literals.js";
import {
  BranchNode, ChainNode, CommandNode, ElseNode, EndNode, ListNode, Node, Parsed, PipeNode, TemplateNode, Tree, VariableNode,
  isEmptyTree, nodeString,
} from "./ast.js";

export * from "./ast.js";

const MAX_STACK_DEPTH = 10000;

/** Parses text into a set of named trees (the main one plus define/block definitions). */
export function parseTrees(name: string, text: string, hasFunction: (name: string) => boolean): Map<string, Tree> {
  const { items } = lex(text);
  const treeSet = new Map<string, Tree>();
  const p = new Parser(name, items, treeSet, hasFunction);
  p.parse();
  p.add();
  return treeSet;
}

class Parser {
  private token: Item[] = [];
  private peekCount = 0;
  private idx = 0;
  vars: string[] = ["$"];
  root: ListNode = { type: "list", pos: 0, nodes: [] };
  private actionLine = 0;
  private rangeDepth = 0;
  private stackDepth = 0;

  constructor(
    public name: string,
    private items: Item[],
    private treeSet: Map<string, Tree>,
    private hasFunction: (name: string) => boolean,
    private parseName: string = name,
    shared?: Parser,
  ) {
    if (shared) this.shareFrom(shared);
  }

  // Sub-parsers (define/block) share the token stream with their parent.
  private shareFrom(p: Parser): void {
    this.token = p.token;
    this.idx = p.idx;
    this.peekCount = p.peekCount;
  }
  private syncTo(p: Parser): void {
    p.token = this.token;
    p.idx = this.idx;
    p.peekCount = this.peekCount;
  }

  private lexNext(): Item {
    const it = this.items[Math.min(this.idx, this.items.length - 1)]!;
    if (this.idx < this.items.length) this.idx++;
    return it;
  }
  next(): Item {
    if (this.peekCount > 0) this.peekCount--;
    else this.token[0] = this.lexNext();
    return this.token[this.peekCount]!;
  }
  backup(): void { this.peekCount++; }
  backup2(t1: Item): void { this.token[1] = t1; this.peekCount = 2; }
  backup3(t2: Item, t1: Item): void { this.token[1] = t1; this.token[2] = t2; this.peekCount = 3; }
  peek(): Item {
    if (this.peekCount > 0) return this.token[this.peekCount - 1]!;
    this.peekCount = 1;
    this.token[0] = this.lexNext();
    return this.token[0];
  }
  nextNonSpace(): Item {
    let t: Item;
    do t = this.next(); while (t.typ === ItemType.Space);
    return t;
  }
  peekNonSpace(): Item {
    const t = this.nextNonSpace();
    this.backup();
    return t;
  }

  errorf(msg: string): never {
    throw new ParseError(`template: ${this.parseName}:${this.token[0]?.line ?? 1}: ${msg}`);
  }
  expect(typ: ItemType, context: string): Item {
    const t = this.nextNonSpace();
    if (t.typ !== typ) this.unexpected(t, context);
    return t;
  }
  unexpected(t: Item, context: string): never {
    if (t.typ === ItemType.Error) {
      let extra = "";
      if (this.actionLine !== 0 && this.actionLine !== t.line) {
        extra = ` in action started at ${this.parseName}:${this.actionLine}`;
        if (t.val.endsWith(" action")) extra = extra.slice(" in action".length);
      }
      this.errorf(t.val + extra);
    }
    this.errorf(`unexpected ${itemString(t)} in ${context}`);
  }

  add(): void {
    const existing = this.treeSet.get(this.name);
    if (!existing || isEmptyTree(existing.root)) {
      this.treeSet.set(this.name, { name: this.name, root: this.root });
      return;
    }
    if (!isEmptyTree(this.root)) this.errorf(`template: multiple definition of template ${JSON.stringify(this.name)}`);
  }

  parse(): void {
    this.root = { type: "list", pos: this.peek().pos, nodes: [] };
    while (this.peek().typ !== ItemType.EOF) {
      if (this.peek().typ === ItemType.LeftDelim) {
        const delim = this.next();
        if (this.nextNonSpace().typ === ItemType.Define) {
          const sub = new Parser("definition", this.items, this.treeSet, this.hasFunction, this.parseName, this);
          sub.parseDefinition();
          sub.syncTo(this);
          continue;
        }
        this.backup2(delim);
      }
      const n = this.textOrAction();
      if (n.type === "end" || n.type === "else") this.errorf(`unexpected ${nodeString(n)}`);
      this.root.nodes.push(n);
    }
  }

  parseDefinition(): void {
    const context = "define clause";
    const t = this.nextNonSpace();
    if (t.typ !== ItemType.String && t.typ !== ItemType.RawString) this.unexpected(t, context);
    this.name = this.unquoteOrFail(t.val);
    this.expect(ItemType.RightDelim, context);
    const [list, end] = this.itemList();
    if (end.type !== "end") this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    this.root = list;
    this.add();
  }

  private unquoteOrFail(s: string): string {
    const r = unquote(s);
    if (r === null) this.errorf("invalid syntax");
    return r;
  }

  itemList(): [ListNode, EndNode | ElseNode] {
    const list: ListNode = { type: "list", pos: this.peekNonSpace().pos, nodes: [] };
    while (this.peekNonSpace().typ !== ItemType.EOF) {
      const n = this.textOrAction();
      if (n.type === "end" || n.type === "else") return [list, n];
      list.nodes.push(n);
    }
    this.errorf("unexpected EOF");
  }

  textOrAction(): Parsed {
    const t = this.nextNonSpace();
    switch (t.typ) {
      case ItemType.Text:
        return { type: "text", pos: t.pos, text: t.val };
      case ItemType.LeftDelim:
        this.actionLine = t.line;
        try {
          return this.action();
        } finally {
          this.actionLine = 0;
        }
      default:
        this.unexpected(t, "input");
    }
  }

  action(): Parsed {
    const t = this.nextNonSpace();
    switch (t.typ) {
      case ItemType.Block: return this.blockControl();
      case ItemType.Break: return this.loopControl(t, "break");
      case ItemType.Continue: return this.loopControl(t, "continue");
      case ItemType.Else: return this.elseControl();
      case ItemType.End: return { type: "end", pos: this.expect(ItemType.RightDelim, "end").pos };
      case ItemType.If: return this.control("if");
      case ItemType.Range: return this.control("range");
      case ItemType.Template: return this.templateControl();
      case ItemType.With: return this.control("with");
    }
    this.backup();
    const tok = this.peek();
    return { type: "action", pos: tok.pos, line: tok.line, pipe: this.pipeline("command", ItemType.RightDelim) };
  }

  loopControl(t: Item, kw: "break" | "continue"): Parsed {
    const tok = this.nextNonSpace();
    if (tok.typ !== ItemType.RightDelim) this.unexpected(tok, `{{${kw}}}`);
    if (this.rangeDepth === 0) this.errorf(`{{${kw}}} outside {{range}}`);
    return { type: kw, pos: t.pos, line: t.line };
  }

  pipeline(context: string, end: ItemType): PipeNode {
    const tok = this.peekNonSpace();
    const pipe: PipeNode = { type: "pipe", pos: tok.pos, line: tok.line, isAssign: false, decl: [], cmds: [] };
    decls: for (;;) {
      const v = this.peekNonSpace();
      if (v.typ !== ItemType.Variable) break;
      this.next();
      const after = this.peek();
      const next = this.peekNonSpace();
      if (next.typ === ItemType.Assign || next.typ === ItemType.Declare) {
        pipe.isAssign = next.typ === ItemType.Assign;
        this.nextNonSpace();
        pipe.decl.push(newVariable(v.pos, v.val));
        this.vars.push(v.val);
      } else if (next.typ === ItemType.Char && next.val === ",") {
        this.nextNonSpace();
        pipe.decl.push(newVariable(v.pos, v.val));
        this.vars.push(v.val);
        if (context === "range" && pipe.decl.length < 2) {
          const k = this.peekNonSpace().typ;
          if (k === ItemType.Variable || k === ItemType.RightDelim || k === ItemType.RightParen) continue decls;
          this.errorf("range can only initialize variables");
        }
        this.errorf(`too many declarations in ${context}`);
      } else if (after.typ === ItemType.Space) {
        this.backup3(v, after);
      } else {
        this.backup2(v);
      }
      break;
    }
    for (;;) {
      const t = this.nextNonSpace();
      switch (t.typ) {
        case end:
          this.checkPipeline(pipe, context);
          return pipe;
        case ItemType.Bool: case ItemType.CharConstant: case ItemType.Complex: case ItemType.Dot:
        case ItemType.Field: case ItemType.Identifier: case ItemType.Number: case ItemType.Nil:
        case ItemType.RawString: case ItemType.String: case ItemType.Variable: case ItemType.LeftParen:
          this.backup();
          pipe.cmds.push(this.command());
          break;
        default:
          this.unexpected(t, context);
      }
    }
  }

  checkPipeline(pipe: PipeNode, context: string): void {
    if (pipe.cmds.length === 0) this.errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, i) => {
      const k = c.args[0]?.type;
      if (k === "bool" || k === "dot" || k === "nil" || k === "number" || k === "string") {
        this.errorf(`non executable command in pipeline stage ${i + 2}`);
      }
    });
  }

  control(context: "if" | "range" | "with"): BranchNode {
    const mark = this.vars.length;
    try {
      const pipe = this.pipeline(context, ItemType.RightDelim);
      if (context === "range") this.rangeDepth++;
      let [list, next] = this.itemList();
      if (context === "range") this.rangeDepth--;
      let elseList: ListNode | null = null;
      if (next.type === "else") {
        // {{else if}} / {{else with}} are rewritten to {{else}}{{if ...}}{{end}}{{end}}.
        if (context === "if" && this.peek().typ === ItemType.If) {
          this.next();
          elseList = { type: "list", pos: next.pos, nodes: [this.control("if")] };
        } else if (context === "with" && this.peek().typ === ItemType.With) {
          this.next();
          elseList = { type: "list", pos: next.pos, nodes: [this.control("with")] };
        } else {
          [elseList, next] = this.itemList();
          if (next.type !== "end") this.errorf(`expected end; found ${nodeString(next)}`);
        }
      }
      return { type: context, pos: pipe.pos, line: pipe.line, pipe, list, elseList };
    } finally {
      this.vars.length = mark;
    }
  }

  elseControl(): ElseNode {
    const peek = this.peekNonSpace();
    if (peek.typ === ItemType.If || peek.typ === ItemType.With) return { type: "else", pos: peek.pos, line: peek.line };
    const t = this.expect(ItemType.RightDelim, "else");
    return { type: "else", pos: t.pos, line: t.line };
  }

  blockControl(): TemplateNode {
    const context = "block clause";
    const t = this.nextNonSpace();
    const name = this.templateName(t, context);
    const pipe = this.pipeline(context, ItemType.RightDelim);
    const sub = new Parser(name, this.items, this.treeSet, this.hasFunction, this.parseName, this);
    const [list, end] = sub.itemList();
    sub.syncTo(this);
    if (end.type !== "end") this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    sub.root = list;
    sub.add();
    return { type: "template", pos: t.pos, line: t.line, name, pipe };
  }

  templateControl(): TemplateNode {
    const context = "template clause";
    const t = this.nextNonSpace();
    const name = this.templateName(t, context);
    let pipe: PipeNode | null = null;
    if (this.nextNonSpace().typ !== ItemType.RightDelim) {
      this.backup();
      pipe = this.pipeline(context, ItemType.RightDelim);
    }
    return { type: "template", pos: t.pos, line: t.line, name, pipe };
  }

  templateName(t: Item, context: string): string {
    if (t.typ === ItemType.String || t.typ === ItemType.RawString) return this.unquoteOrFail(t.val);
    this.unexpected(t, context);
  }

  command(): CommandNode {
    const cmd: CommandNode = { type: "command", pos: this.peekNonSpace().pos, args: [] };
    for (;;) {
      this.peekNonSpace();
      const operand = this.operand();
      if (operand) cmd.args.push(operand);
      const t = this.next();
      if (t.typ === ItemType.Space) continue;
      if (t.typ === ItemType.RightDelim || t.typ === ItemType.RightParen) this.backup();
      else if (t.typ !== ItemType.Pipe) this.unexpected(t, "operand");
      break;
    }
    if (cmd.args.length === 0) this.errorf("empty command");
    return cmd;
  }

  operand(): Node | null {
    let node = this.term();
    if (!node) return null;
    if (this.peek().typ === ItemType.Field) {
      const pos = this.peek().pos;
      const fields: string[] = [];
      while (this.peek().typ === ItemType.Field) fields.push(this.next().val.slice(1));
      const chain: ChainNode = { type: "chain", pos, node, field: fields };
      switch (node.type) {
        case "field":
          node = { type: "field", pos, ident: [...node.ident, ...fields] };
          break;
        case "variable":
          node = { type: "variable", pos, ident: [...node.ident, ...fields] };
          break;
        case "bool": case "string": case "number": case "nil": case "dot":
          this.errorf(`unexpected . after term ${JSON.stringify(nodeString(node))}`);
        default:
          node = chain;
      }
    }
    return node;
  }

  term(): Node | null {
    const t = this.nextNonSpace();
    switch (t.typ) {
      case ItemType.Identifier:
        if (!this.hasFunction(t.val)) this.errorf(`function ${JSON.stringify(t.val)} not defined`);
        return { type: "identifier", pos: t.pos, ident: t.val };
      case ItemType.Dot:
        return { type: "dot", pos: t.pos };
      case ItemType.Nil:
        return { type: "nil", pos: t.pos };
      case ItemType.Variable:
        if (!this.vars.includes(t.val.split(".")[0]!)) this.errorf(`undefined variable ${JSON.stringify(t.val.split(".")[0])}`);
        return newVariable(t.pos, t.val);
      case ItemType.Field:
        return { type: "field", pos: t.pos, ident: t.val.slice(1).split(".") };
      case ItemType.Bool:
        return { type: "bool", pos: t.pos, value: t.val === "true" };
      case ItemType.CharConstant: case ItemType.Complex: case ItemType.Number: {
        const r = parseNumber(t.val, t.typ === ItemType.CharConstant, t.typ === ItemType.Complex);
        if (typeof r === "string") this.errorf(r);
        return { type: "number", pos: t.pos, ...r };
      }
      case ItemType.LeftParen: {
        if (this.stackDepth >= MAX_STACK_DEPTH) this.errorf("max expression depth exceeded");
        this.stackDepth++;
        try {
          return this.pipeline("parenthesized pipeline", ItemType.RightParen);
        } finally {
          this.stackDepth--;
        }
      }
      case ItemType.String: case ItemType.RawString:
        return { type: "string", pos: t.pos, quoted: t.val, text: this.unquoteOrFail(t.val) };
    }
    this.backup();
    return null;
  }
}

function newVariable(pos: number, ident: string): VariableNode {
  return { type: "variable", pos, ident: ident.split(".") };
}
