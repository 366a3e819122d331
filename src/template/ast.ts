// AST of a parsed template, mirroring text/template/parse's node types.

import type { NumberConst } from "./literals.js";

export type Node =
  | ListNode
  | TextNode
  | CommentNode
  | ActionNode
  | PipeNode
  | CommandNode
  | IdentifierNode
  | VariableNode
  | DotNode
  | NilNode
  | FieldNode
  | ChainNode
  | BoolNode
  | NumberNode
  | StringNode
  | BranchNode
  | TemplateNode
  | BreakNode
  | ContinueNode;

export interface ListNode { type: "list"; pos: number; nodes: Node[] }
export interface TextNode { type: "text"; pos: number; text: string }
export interface CommentNode { type: "comment"; pos: number; text: string }
export interface ActionNode { type: "action"; pos: number; line: number; pipe: PipeNode }
export interface PipeNode { type: "pipe"; pos: number; line: number; isAssign: boolean; decl: VariableNode[]; cmds: CommandNode[] }
export interface CommandNode { type: "command"; pos: number; args: Node[] }
export interface IdentifierNode { type: "identifier"; pos: number; ident: string }
export interface VariableNode { type: "variable"; pos: number; ident: string[] }
export interface DotNode { type: "dot"; pos: number }
export interface NilNode { type: "nil"; pos: number }
export interface FieldNode { type: "field"; pos: number; ident: string[] }
export interface ChainNode { type: "chain"; pos: number; node: Node; field: string[] }
export interface BoolNode { type: "bool"; pos: number; value: boolean }
export interface NumberNode extends NumberConst { type: "number"; pos: number }
export interface StringNode { type: "string"; pos: number; quoted: string; text: string }
export interface BranchNode { type: "if" | "range" | "with"; pos: number; line: number; pipe: PipeNode; list: ListNode; elseList: ListNode | null }
export interface TemplateNode { type: "template"; pos: number; line: number; name: string; pipe: PipeNode | null }
export interface BreakNode { type: "break"; pos: number; line: number }
export interface ContinueNode { type: "continue"; pos: number; line: number }
export interface EndNode { type: "end"; pos: number }
export interface ElseNode { type: "else"; pos: number; line: number }
export type Parsed = Node | EndNode | ElseNode;


/** Go's Node.String(). */
export function nodeString(n: Parsed | null): string {
  if (!n) return "";
  switch (n.type) {
    case "list": return n.nodes.map(nodeString).join("");
    case "text": return n.text;
    case "comment": return "{{" + n.text + "}}";
    case "action": return "{{" + nodeString(n.pipe) + "}}";
    case "pipe": {
      let s = "";
      if (n.decl.length) s = n.decl.map(nodeString).join(", ") + (n.isAssign ? " = " : " := ");
      return s + n.cmds.map(nodeString).join(" | ");
    }
    case "command": return n.args.map((a) => (a.type === "pipe" ? "(" + nodeString(a) + ")" : nodeString(a))).join(" ");
    case "identifier": return n.ident;
    case "variable": return n.ident.join(".");
    case "dot": return ".";
    case "nil": return "nil";
    case "field": return n.ident.map((i) => "." + i).join("");
    case "chain": return (n.node.type === "pipe" ? "(" + nodeString(n.node) + ")" : nodeString(n.node)) + n.field.map((f) => "." + f).join("");
    case "bool": return n.value ? "true" : "false";
    case "number": return n.text;
    case "string": return n.quoted;
    case "if": case "range": case "with": {
      const els = n.elseList ? "{{else}}" + nodeString(n.elseList) : "";
      return `{{${n.type} ${nodeString(n.pipe)}}}${nodeString(n.list)}${els}{{end}}`;
    }
    case "template": return `{{template ${JSON.stringify(n.name)}${n.pipe ? " " + nodeString(n.pipe) : ""}}}`;
    case "break": return "{{break}}";
    case "continue": return "{{continue}}";
    case "end": return "{{end}}";
    case "else": return "{{else}}";
  }
}

export interface Tree { name: string; root: ListNode }

/** parse.IsEmptyTree: only space text and comments. */
export function isEmptyTree(n: Node | null): boolean {
  if (!n) return true;
  switch (n.type) {
    case "list": return n.nodes.every(isEmptyTree);
    case "text": return n.text.trim() === "";
    case "comment": return true;
    default: return false;
  }
}
