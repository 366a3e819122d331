// Ollama's template layer (template/template.go): Parse (auto-appended {{ .Response }}),
// Vars, and Execute (collation, messages / legacy / fill-in-middle modes, the legacy
// "cut after .Response" final turn) plus the Go-typed data model templates see.

import { TemplateError } from "./errors.js";
import { BUILTINS } from "./funcs.js";
import { ExecuteOptions, Template, identifiersOf, parseTemplate, templateFromTrees } from "./index.js";
import { ActionNode, ListNode, Node, PipeNode, Tree } from "./parser.js";
import { GoNamed, GoStruct, StructType, fromJSON, marshalJSON } from "./values.js";

// ---------- API shapes (as received by /api/chat) ----------

export interface ApiToolCall {
  id?: string;
  function: { index?: number; name: string; arguments?: Record<string, unknown> | null };
}
export interface ApiMessage {
  role: string;
  content?: string;
  thinking?: string;
  images?: Array<string | Uint8Array>;
  tool_calls?: ApiToolCall[];
  tool_name?: string;
  tool_call_id?: string;
}
export interface ApiToolProperty {
  anyOf?: ApiToolProperty[];
  type?: string | string[];
  items?: unknown;
  description?: string;
  enum?: unknown[];
  properties?: Record<string, ApiToolProperty>;
  required?: string[];
}
export interface ApiTool {
  type?: string;
  items?: unknown;
  function: {
    name: string;
    description?: string;
    parameters?: {
      type?: string;
      $defs?: unknown;
      items?: unknown;
      required?: string[];
      properties?: Record<string, ApiToolProperty>;
    };
  };
}
export interface OllamaValues {
  messages?: ApiMessage[];
  tools?: ApiTool[] | null;
  prompt?: string;
  suffix?: string;
  think?: boolean;
  thinkLevel?: string;
  isThinkSet?: boolean;
}

// ---------- Go data model ----------

const asJSON = (self: GoStruct): string => marshalJSON(self);

export const TYPES = {
  message: {
    name: "template.templateMessage",
    pointer: true,
    fields: ["Role", "Content", "Thinking", "Images", "ToolCalls", "ToolName", "ToolCallID"].map((name) => ({ name })),
  },
  toolCall: { name: "template.templateToolCall", fields: [{ name: "ID" }, { name: "Function" }] },
  toolCallFunction: {
    name: "template.templateToolCallFunction",
    fields: [{ name: "Index" }, { name: "Name" }, { name: "Arguments" }],
  },
  tool: {
    name: "template.templateTool",
    string: asJSON,
    fields: [
      { name: "Type", json: "type" },
      { name: "Items", json: "items,omitempty" },
      { name: "Function", json: "function" },
    ],
  },
  // Deliberate: String() on the function and its parameters prints JSON, as api.ToolFunction and
  // api.ToolFunctionParameters did (v0.5–v0.12); templates like qwen2.5/qwen3 rely on
  // `{"type": "function", "function": {{ .Function }}}`.
  toolFunction: {
    name: "template.templateToolFunction",
    string: asJSON,
    fields: [
      { name: "Name", json: "name" },
      { name: "Description", json: "description" },
      { name: "Parameters", json: "parameters" },
    ],
  },
  toolParameters: {
    name: "template.templateToolFunctionParameters",
    string: asJSON,
    fields: [
      { name: "Type", json: "type" },
      { name: "Defs", json: "$defs,omitempty" },
      { name: "Items", json: "items,omitempty" },
      { name: "Required", json: "required,omitempty" },
      { name: "Properties", json: "properties" },
    ],
  },
  toolProperty: {
    name: "api.ToolProperty",
    fields: [
      { name: "AnyOf", json: "anyOf,omitempty" },
      { name: "Type", json: "type,omitempty" },
      { name: "Items", json: "items,omitempty" },
      { name: "Description", json: "description,omitempty" },
      { name: "Enum", json: "enum,omitempty" },
      { name: "Properties", json: "properties,omitempty" },
      { name: "Required", json: "required,omitempty" },
    ],
  },
} satisfies Record<string, StructType>;

const jsonOr = (v: unknown): unknown => (v === undefined ? null : fromJSON(v));

/** api.PropertyType: []string printing as "t" (one), "[a b]" (several); JSON string or array. */
function propertyType(t: string | string[] | undefined): GoNamed {
  const list = t === undefined ? [] : Array.isArray(t) ? t : [t];
  return new GoNamed(list, {
    type: "api.PropertyType",
    string: () => (list.length === 0 ? "" : list.length === 1 ? list[0]! : `[${list.join(" ")}]`),
    marshalJSON: () => marshalJSON(list.length === 1 ? list[0] : list),
  });
}

export function toolPropertyValue(p: ApiToolProperty): GoStruct {
  let nested: unknown = null;
  if (p.properties) {
    const entries = Object.entries(p.properties).map(([k, v]) => [k, toolPropertyValue(v)] as const);
    const obj = Object.fromEntries(entries);
    // *api.ToolPropertiesMap keeps insertion order in JSON.
    nested = new GoNamed(obj, {
      type: "*api.ToolPropertiesMap",
      marshalJSON: () => "{" + entries.map(([k, v]) => marshalJSON(k) + ":" + marshalJSON(v)).join(",") + "}",
    });
  }
  return new GoStruct(TYPES.toolProperty, {
    AnyOf: (p.anyOf ?? []).map(toolPropertyValue),
    Type: propertyType(p.type),
    Items: jsonOr(p.items),
    Description: p.description ?? "",
    Enum: p.enum ? (fromJSON(p.enum) as unknown[]) : [],
    Properties: nested,
    Required: p.required ?? [],
  });
}

export function toolValue(t: ApiTool): GoStruct {
  const params = t.function.parameters ?? {};
  const props = params.properties;
  const propMap = props ? Object.fromEntries(Object.entries(props).map(([k, v]) => [k, toolPropertyValue(v)])) : {};
  return new GoStruct(TYPES.tool, {
    Type: t.type ?? "",
    Items: jsonOr(t.items),
    Function: new GoStruct(TYPES.toolFunction, {
      Name: t.function.name,
      Description: t.function.description ?? "",
      Parameters: new GoStruct(TYPES.toolParameters, {
        Type: params.type ?? "",
        Defs: jsonOr(params.$defs),
        Items: jsonOr(params.items),
        Required: params.required ?? [],
        Properties: new GoNamed(propMap, {
          type: "template.templateProperties",
          string: () => (props ? marshalJSON(propMap) : "{}"),
          marshalJSON: () => (props ? marshalJSON(propMap) : "null"),
        }),
      }),
    }),
  });
}

/** .Tools: template.templateTools, printing as JSON ("null" when the request had no tools). */
export function toolsValue(tools: ApiTool[] | null | undefined): GoNamed {
  const list = (tools ?? []).map(toolValue);
  const json = (): string => (tools ? marshalJSON(list) : "null");
  return new GoNamed(list, { type: "template.templateTools", string: json, marshalJSON: json });
}

/** .Function.Arguments: template.templateArgs, a map printing as compact JSON with sorted keys. */
export function argumentsValue(args: Record<string, unknown> | null | undefined): GoNamed {
  const m = (args ? fromJSON(args) : {}) as Record<string, unknown>;
  return new GoNamed(m, {
    type: "template.templateArgs",
    string: () => (args ? marshalJSON(m) : "{}"),
    marshalJSON: () => (args ? marshalJSON(m) : "null"),
  });
}

function imageBytes(img: string | Uint8Array): Uint8Array {
  return typeof img === "string" ? new Uint8Array(Buffer.from(img, "base64")) : img;
}

export function messageValue(m: ApiMessage): GoStruct {
  return new GoStruct(TYPES.message, {
    Role: m.role,
    Content: m.content ?? "",
    Thinking: m.thinking ?? "",
    Images: (m.images ?? []).map(imageBytes),
    ToolCalls: (m.tool_calls ?? []).map(
      (tc) =>
        new GoStruct(TYPES.toolCall, {
          ID: tc.id ?? "",
          Function: new GoStruct(TYPES.toolCallFunction, {
            Index: tc.function.index ?? 0,
            Name: tc.function.name,
            Arguments: argumentsValue(tc.function.arguments),
          }),
        }),
    ),
    ToolName: m.tool_name ?? "",
    ToolCallID: m.tool_call_id ?? "",
  });
}

/** template.collate: joined system text, consecutive same-role messages merged (except tool). */
export function collate(msgs: readonly ApiMessage[]): { system: string; messages: ApiMessage[] } {
  const system: string[] = [];
  const out: ApiMessage[] = [];
  for (const m of msgs) {
    if (m.role === "system") system.push(m.content ?? "");
    const last = out[out.length - 1];
    if (last && last.role === m.role && m.role !== "tool") last.content = (last.content ?? "") + "\n\n" + (m.content ?? "");
    else out.push({ ...m });
  }
  return { system: system.join("\n\n"), messages: out };
}

/** The data map Ollama passes in messages mode. */
export function chatData(v: OllamaValues): Record<string, unknown> {
  const { system, messages } = collate(v.messages ?? []);
  return {
    System: system,
    Messages: messages.map(messageValue),
    Tools: toolsValue(v.tools),
    Response: "",
    Think: v.think ?? false,
    ThinkLevel: v.thinkLevel ?? "",
    IsThinkSet: v.isThinkSet ?? false,
  };
}

// ---------- template ----------

function responseNode(): ActionNode {
  const field: Node = { type: "field", pos: 0, ident: ["Response"] };
  const pipe: PipeNode = { type: "pipe", pos: 0, line: 0, isAssign: false, decl: [], cmds: [{ type: "command", pos: 0, args: [field] }] };
  return { type: "action", pos: 0, line: 0, pipe };
}

/** deleteNode with Ollama's predicate: keep everything up to the first `.Response` field, drop the rest. */
export function cutAfterResponse(root: ListNode): ListNode {
  let cut = false;
  const fn = (n: Node): boolean => {
    if (n.type === "field" && n.ident.includes("Response")) {
      cut = true;
      return false;
    }
    return cut;
  };
  const walk = (n: Node): Node | null => {
    if (fn(n)) return null;
    switch (n.type) {
      case "list":
        n.nodes = n.nodes.map(walk).filter((c): c is Node => c !== null);
        return n;
      case "if":
      case "range":
      case "with":
        n.list = (walk(n.list) as ListNode | null) ?? { type: "list", pos: n.list.pos, nodes: [] };
        // Go would panic asserting a deleted else list; treat it as absent.
        if (n.elseList) n.elseList = walk(n.elseList) as ListNode | null;
        return n;
      case "action": {
        const p = walk(n.pipe);
        if (!p) return null;
        n.pipe = p as PipeNode;
        return n;
      }
      case "pipe": {
        const cmds = [];
        for (const c of n.cmds) {
          const args = c.args.map(walk).filter((a): a is Node => a !== null);
          if (args.length === 0) return null;
          c.args = args;
          cmds.push(c);
        }
        if (cmds.length === 0) return null;
        n.cmds = cmds;
        return n;
      }
    }
    return n;
  };
  return (walk(structuredClone(root)) as ListNode | null) ?? { type: "list", pos: root.pos, nodes: [] };
}

export class OllamaTemplate {
  private constructor(
    readonly raw: string,
    readonly template: Template,
    private readonly varList: string[],
  ) {}

  /** template.Parse: name "", missingkey=zero, Ollama funcs; appends {{ .Response }} when neither .Messages nor .Response is used. */
  static parse(raw: string): OllamaTemplate {
    const parsed = parseTemplate(raw, "");
    const vars = new Set<string>();
    for (const t of parsed.trees.values()) {
      for (const n of t.root.nodes) for (const id of identifiersOf(n, true)) vars.add(id.toLowerCase());
    }
    const varList = [...vars].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    let template = parsed;
    if (!vars.has("messages") && !vars.has("response")) {
      const trees = new Map<string, Tree>(parsed.trees);
      const main = trees.get("") ?? { name: "", root: { type: "list" as const, pos: 0, nodes: [] } };
      trees.set("", { name: "", root: { ...main.root, nodes: [...main.root.nodes, responseNode()] } });
      template = templateFromTrees(trees, raw, "");
      varList.push("response"); // Vars() runs on the touched-up tree afterwards
      varList.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
    return new OllamaTemplate(raw, template, varList);
  }

  vars(): string[] {
    return [...this.varList];
  }

  contains(s: string): boolean {
    return this.raw.includes(s);
  }

  /** template.Template.Execute. */
  execute(v: OllamaValues, opts: ExecuteOptions = {}): string {
    const think = { Think: v.think ?? false, ThinkLevel: v.thinkLevel ?? "", IsThinkSet: v.isThinkSet ?? false };
    if (v.prompt && v.suffix) {
      return this.template.execute({ Prompt: v.prompt, Suffix: v.suffix, Response: "", ...think }, opts);
    }
    if (this.varList.includes("messages")) return this.template.execute(chatData(v), opts);

    const { messages } = collate(v.messages ?? []);
    let out = "";
    let system = "";
    let prompt = "";
    let response = "";
    // One output bound for all turns together: each turn may use what the earlier ones left.
    const left = () => ({ ...opts, maxChars: (opts.maxChars ?? Infinity) - out.length });
    const exec = (): void => {
      out += this.template.execute({ System: system, Prompt: prompt, Response: response, ...think }, left());
      system = prompt = response = "";
    };
    for (const m of messages) {
      if (m.role === "system") {
        if (prompt !== "" || response !== "") exec();
        system = m.content ?? "";
      } else if (m.role === "user") {
        if (response !== "") exec();
        prompt = m.content ?? "";
      } else if (m.role === "assistant") {
        response = m.content ?? "";
      }
    }
    // The final turn runs a fresh template holding only the cut main tree: builtins only,
    // no {{define}}s, default missingkey option (template.New("").AddParseTree).
    const root = cutAfterResponse(this.template.root);
    const last = templateFromTrees(new Map([["", { name: "", root }]]), this.raw, "", BUILTINS);
    out += last.execute({ System: system, Prompt: prompt, Response: response, ...think }, { ...left(), missingKey: "invalid" });
    return out;
  }
}

export { TemplateError };
