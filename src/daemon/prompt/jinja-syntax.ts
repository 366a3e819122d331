// Jinja2 syntax the engine's parser (@huggingface/jinja) lacks, brought to forms it parses: the source
// and token stream are rewritten before `parse`, and the tree mended after it, never the engine forked.
//   {% raw %}…{% endraw %}        → the text as one string literal (with Jinja2's whitespace rules)
//   {% with a = 1 %}…{% endwith %} → a scoped block (jinja-python.ts evaluates it)
//   x is divisibleby(3), x is eq 3 → a test with arguments
//   (), (x,)                       → tuples
//   1e20, 2.5e-3, 0x1F             → number literals
//   '\d', '\101', '\U0001F600'     → string escapes as Python reads them
//   {%+ … +%}                      → whitespace kept as Jinja2 keeps it
//   \r\n, \r                       → \n, as Jinja2's lexer normalizes line breaks
import { parse, Template, tokenize } from "@huggingface/jinja";

/* eslint-disable @typescript-eslint/no-explicit-any */
type Node = any;
interface Token {
  value: string;
  type: string;
}
const tok = (value: string, type: string): Token => ({ value, type });

/** Global function names the rewrites call; jinja-python.ts defines them. */
export const TUPLE_FN = "__ollamats_tuple__";
const TEST_ARGS_FN = "__ollamats_test_args__";
const WITH_MARK = "__ollamats_with_";
const RECURSIVE_MARK = "__ollamats_recursive__";
export const SCOPED_BLOCK = "OllamatsScopedBlock";

/** Parses a chat template as Python's Jinja2 would (trim_blocks and lstrip_blocks, as transformers renders). */
export function compileJinja(source: string): Template {
  // Jinja2's lexer makes every line break "\n" (newline_sequence), in text and string literals alike:
  // a template saved with Windows line breaks renders as one saved with Unix ones.
  const text = scanTags(rawBlocks(source.replace(/\r\n?/g, "\n")));
  const tokens = rewriteTokens(tokenize(text, { lstrip_blocks: true, trim_blocks: true }) as Token[]);
  return Object.assign(new Template(""), { parsed: mend(parse(tokens as never)) });
}

// ----- {% raw %} -----

/** Each raw block becomes `{% if true %}{{ "text" }}{% endif %}`, keeping the tags' whitespace control. The text
 *  is escaped so that neither the engine's trim/lstrip pass nor its lexer sees anything in it. */
function rawBlocks(source: string): string {
  return source.replace(/\{%(-?)\s*raw\s*(-?)%\}([\s\S]*?)\{%(-?)\s*endraw\s*(-?)%\}/g, (_m, before: string, after: string, text: string, endBefore: string, endAfter: string) => {
    if (after) text = text.trimStart();
    // lstrip_blocks: the indentation before `{% endraw %}` at the start of its line
    text = endBefore ? text.trimEnd() : text.replace(/(^|\n)[ \t]*$/, "$1");
    const literal = text.replace(/[^\w ]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    return `{%${before} if true %}{{ "${literal}" }}{%${endBefore ? "-" : ""} endif ${endAfter}%}`;
  });
}

// Escapes the engine's lexer knows; the others are rewritten to these.
const KNOWN_ESCAPES = new Set(["n", "t", "r", "b", "f", "v", "'", '"', "\\", "x", "u"]);
const unit = (code: number): string => `\\u${code.toString(16).padStart(4, "0")}`;
const codePoint = (cp: number): string => (cp > 0xffff ? unit(0xd800 + ((cp - 0x10000) >> 10)) + unit(0xdc00 + ((cp - 0x10000) & 0x3ff)) : unit(cp));

/** The tags' insides, read as Jinja2 reads them: string literals with Python's escapes (an unknown
 *  escape keeps its backslash, `'\\d'`; octal, `\\a`, `\\U0001F600` and a backslash-newline are what
 *  Python makes of them), and the `{%+` and `+%}` markers that turn lstrip_blocks and trim_blocks off
 *  for one tag: the whitespace they keep moves into an expression neither touches. Text between tags
 *  and comments pass unchanged; one pass, so a long template costs its length. */
function scanTags(source: string): string {
  const opener = /\{[{%#]/g;
  let out = "";
  let i = 0;
  for (;;) {
    opener.lastIndex = i;
    const found = opener.exec(source);
    if (!found) return out + source.slice(i);
    const kind = source[found.index + 1];
    out += source.slice(i, found.index);
    i = found.index + 2;
    if (kind === "#") {
      const end = source.indexOf("#}", i);
      const stop = end < 0 ? source.length : end + 2;
      out += source.slice(found.index, stop);
      i = stop;
      continue;
    }
    if (kind === "%" && source[i] === "+") {
      // `{%+`: the indentation before the tag is kept
      let start = out.length;
      while (start > 0 && (out[start - 1] === " " || out[start - 1] === "\t")) start--;
      const space = out.slice(start);
      const lineStart = start === 0 || out[start - 1] === "\n";
      if (space && lineStart) out = out.slice(0, -space.length) + `{{ "${space.replace(/\t/g, "\\t")}" }}`;
      i++;
    }
    out += `{${kind}`;
    let depth = 0;
    while (i < source.length) {
      const c = source[i]!;
      if (c === "'" || c === '"') {
        const [literal, next] = pythonString(source, i);
        out += literal;
        i = next;
        continue;
      }
      if (depth === 0 && kind === "%" && source.startsWith("+%}", i)) {
        // `+%}`: the line break after the tag is kept
        const nl = source[i + 3] === "\n";
        out += nl ? `%}{{ "\\n" }}` : "%}";
        i += nl ? 4 : 3;
        break;
      }
      if (depth === 0 && ((kind === "{" && source.startsWith("}}", i)) || (kind === "%" && source.startsWith("%}", i)))) {
        out += source.slice(i, i + 2);
        i += 2;
        break;
      }
      if (c === "{") depth++;
      else if (c === "}") depth = Math.max(0, depth - 1);
      out += c;
      i++;
    }
  }
}
/** One quoted literal from `at`, with its escapes made ones the engine reads alike; and where it ends. */
function pythonString(source: string, at: number): [string, number] {
  const quote = source[at]!;
  let out = quote;
  let i = at + 1;
  while (i < source.length && source[i] !== quote) {
    if (source[i] !== "\\") {
      out += source[i++];
      continue;
    }
    const c = source[i + 1] ?? "";
    const octal = /^[0-7]{1,3}/.exec(source.slice(i + 1, i + 4));
    const wide = c === "U" ? /^[0-9a-fA-F]{8}/.exec(source.slice(i + 2, i + 10)) : null;
    if (octal) (out += unit(parseInt(octal[0], 8))), (i += 1 + octal[0].length);
    else if (wide && Number.parseInt(wide[0], 16) <= 0x10ffff) (out += codePoint(Number.parseInt(wide[0], 16))), (i += 10);
    else if (c === "a") (out += unit(7)), (i += 2);
    else if (c === "\n") i += 2;
    else if (KNOWN_ESCAPES.has(c)) (out += "\\" + c), (i += 2);
    else (out += "\\\\"), (i += 1); // the backslash itself; what follows is read as it stands
  }
  return [out + (source[i] ?? ""), i + 1];
}

// ----- tokens -----

const is = (t: Token | undefined, type: string, value?: string): boolean => !!t && t.type === type && (value === undefined || t.value === value);
const OPENERS: Record<string, string> = { OpenParen: "CloseParen", OpenSquareBracket: "CloseSquareBracket", OpenCurlyBracket: "CloseCurlyBracket" };
/** Index of the bracket closing the one at `i` (or the end of the tag, when unbalanced). */
function closing(tokens: Token[], i: number): number {
  let depth = 0;
  for (let j = i; j < tokens.length; j++) {
    const t = tokens[j]!;
    if (OPENERS[t.type]) depth++;
    else if (Object.values(OPENERS).includes(t.type)) depth--;
    else if (t.type === "CloseExpression" || t.type === "CloseStatement") return j - 1;
    if (depth === 0) return j;
  }
  return tokens.length - 1;
}
// Words before `(` that make it a grouping, not a call.
const KEYWORDS = new Set(["in", "is", "not", "and", "or", "if", "elif", "else", "for", "set"]);

function rewriteTokens(input: Token[]): Token[] {
  let tokens = numberLiterals(input);
  tokens = withBlocks(tokens);
  tokens = recursiveLoops(tokens);
  tokens = testArguments(tokens);
  return tuples(tokens);
}

/** The lexer reads `1e20` as 1 and a name `e20`, `2.5e-3` as 2.5, `e`, `-`, 3: one float literal each; `0x1F` likewise. */
function numberLiterals(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!, next = tokens[i + 1];
    let text: string | undefined, used = 0;
    // after a dict literal the lexer takes `- x` for a sign: it is a subtraction
    if (is(out.at(-1), "CloseCurlyBracket") && /^[+-]/.test(t.value) && (t.type === "UnaryOperator" || t.type === "NumericLiteral")) {
      out.push(tok(t.value[0]!, "AdditiveBinaryOperator"));
      if (t.value.length > 1) out.push(tok(t.value.slice(1), "NumericLiteral"));
      continue;
    }
    if (is(t, "NumericLiteral") && next?.type === "Identifier") {
      const radix = /^([xX][0-9a-fA-F_]+|[oO][0-7_]+|[bB][01_]+)$/.test(next.value) && /^-?0$/.test(t.value);
      if (radix) {
        // 0x1F, 0o17, 0b101: the lexer reads a 0 and a name
        const n = Number(`0${next.value.replace(/_/g, "")}`);
        out.push(tok(String(t.value.startsWith("-") ? -n : n), "NumericLiteral"));
        i += 1;
        continue;
      }
      if (/^[eE]\d+$/.test(next.value)) (text = t.value + next.value), (used = 1);
      else if (/^[eE]$/.test(next.value) && is(tokens[i + 2], "AdditiveBinaryOperator") && /^[+-]$/.test(tokens[i + 2]!.value) && is(tokens[i + 3], "NumericLiteral") && /^\d+$/.test(tokens[i + 3]!.value)) {
        text = t.value + "e" + tokens[i + 2]!.value + tokens[i + 3]!.value;
        used = 3;
      }
    }
    if (text === undefined) {
      out.push(t);
      continue;
    }
    // The parser makes a float of a literal with a dot in it.
    const s = String(Number(text));
    out.push(tok(s.includes(".") ? s : s.includes("e") ? s.replace("e", ".0e") : `${s}.0`, "NumericLiteral"));
    i += used;
  }
  return out;
}

/** `{% with a = 1, b = x %}` → `{% if __ollamats_with_2__ %}{% set a = 1 %}{% set b = x %}`, `{% endwith %}` → `{% endif %}`. */
function withBlocks(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (!is(t, "OpenStatement") || !is(tokens[i + 1], "Identifier")) {
      out.push(t);
      continue;
    }
    const word = tokens[i + 1]!.value;
    if (word === "endwith") {
      out.push(t, tok("endif", "Identifier"));
      i += 1;
      continue;
    }
    if (word !== "with") {
      out.push(t);
      continue;
    }
    let end = i + 2;
    while (end < tokens.length && !is(tokens[end], "CloseStatement")) end++;
    const assignments: Token[][] = [[]];
    for (let j = i + 2; j < end; j++) {
      const tj = tokens[j]!;
      if (OPENERS[tj.type]) {
        const k = closing(tokens, j);
        assignments.at(-1)!.push(...tokens.slice(j, k + 1));
        j = k;
      } else if (is(tj, "Comma")) assignments.push([]);
      else assignments.at(-1)!.push(tj);
    }
    const sets = assignments.filter((a) => a.length > 0);
    out.push(t, tok("if", "Identifier"), tok(`${WITH_MARK}${sets.length}__`, "Identifier"), tokens[end]!);
    for (const a of sets) out.push(tok("{%", "OpenStatement"), tok("set", "Identifier"), ...a, tok("%}", "CloseStatement"));
    i = end;
  }
  return out;
}

/** `{% for x in tree recursive %}` → `{% for x in tree %}{{ __ollamats_recursive__ }}`; mend() marks the loop. */
function recursiveLoops(tokens: Token[]): Token[] {
  const out: Token[] = [];
  let inFor = false;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (is(t, "Identifier", "for") && is(tokens[i - 1], "OpenStatement")) inFor = true;
    if (inFor && is(t, "Identifier", "recursive") && is(tokens[i + 1], "CloseStatement")) {
      out.push(tokens[i + 1]!, tok("{{", "OpenExpression"), tok(RECURSIVE_MARK, "Identifier"), tok("}}", "CloseExpression"));
      i += 1;
      inFor = false;
      continue;
    }
    if (is(t, "CloseStatement")) inFor = false;
    out.push(t);
  }
  return out;
}

/** `x is eq(1)` and `x is eq 1` → `x is eq ** __ollamats_test_args__(1)`; mend() makes the test take them.
 *  As Jinja2's parse_test: a test's one bare argument is a primary expression and its postfixes. */
function testArguments(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    out.push(t);
    if (!is(t, "Identifier", "is") || is(tokens[i - 1], "Dot")) continue;
    let name = i + 1;
    if (is(tokens[name], "Identifier", "not")) name++;
    if (!is(tokens[name], "Identifier")) continue;
    out.push(...tokens.slice(i + 1, name + 1));
    i = name;
    const next = tokens[i + 1];
    const opens = next && (OPENERS[next.type] !== undefined);
    const bare = next && (next.type === "StringLiteral" || next.type === "NumericLiteral" || (next.type === "Identifier" && !["else", "or", "and"].includes(next.value)));
    if (!opens && !bare) continue;
    let end = next.type === "StringLiteral" ? lastOfRun(tokens, i + 1) : opens ? closing(tokens, i + 1) : i + 1;
    const call = is(next, "OpenParen");
    if (!call) end = postfixEnd(tokens, end);
    out.push(tok("**", "ExponentiationBinaryOperator"), tok(TEST_ARGS_FN, "Identifier"));
    if (!call) out.push(tok("(", "OpenParen"));
    out.push(...testArguments(tokens.slice(i + 1, end + 1)));
    if (!call) out.push(tok(")", "CloseParen"));
    i = end;
  }
  return out;
}
const lastOfRun = (tokens: Token[], i: number): number => {
  while (is(tokens[i + 1], "StringLiteral")) i++;
  return i;
};
/** The last token of `.name`, `[…]` and `(…)` postfixes after the one at `end`. */
function postfixEnd(tokens: Token[], end: number): number {
  for (;;) {
    const n = tokens[end + 1];
    if (is(n, "Dot") && is(tokens[end + 2], "Identifier")) end += 2;
    else if (is(n, "OpenSquareBracket") || is(n, "OpenParen")) end = closing(tokens, end + 1);
    else return end;
  }
}

/** `()` → `__ollamats_tuple__()`; `(x,)` → `__ollamats_tuple__(x)`; `(x, y,)` → `(x, y)`. Calls keep theirs. */
function tuples(tokens: Token[]): Token[] {
  const out = tokens.slice();
  const stack: Array<{ at: number; group: boolean; commas: number }> = [];
  const inserts: number[] = [];
  for (let i = 0; i < out.length; i++) {
    const t = out[i]!;
    if (OPENERS[t.type]) {
      const prev = out[i - 1];
      const callee = !!prev && (["CloseParen", "CloseSquareBracket", "StringLiteral"].includes(prev.type) || (prev.type === "Identifier" && !KEYWORDS.has(prev.value)));
      stack.push({ at: i, group: t.type === "OpenParen" && !callee, commas: 0 });
    } else if (Object.values(OPENERS).includes(t.type)) {
      const open = stack.pop();
      if (!open?.group) continue;
      if (i === open.at + 1) inserts.push(open.at);
      else if (is(out[i - 1], "Comma")) {
        out[i - 1] = tok("", "Removed");
        if (open.commas === 1) inserts.push(open.at);
      }
    } else if (is(t, "Comma") && stack.length > 0) stack.at(-1)!.commas++;
    else if (t.type === "CloseExpression" || t.type === "CloseStatement") stack.length = 0;
  }
  for (const at of inserts.sort((a, b) => b - a)) out.splice(at, 0, tok(TUPLE_FN, "Identifier"));
  return out.filter((t) => t.type !== "Removed");
}

// ----- the parsed tree -----

/** Walks the tree bottom up, replacing the placeholders the token rewrites left. */
function mend(node: Node): Node {
  if (Array.isArray(node)) return node.map(mend);
  if (node instanceof Map) return new Map([...node].map(([k, v]) => [mend(k), mend(v)]));
  if (!node || typeof node !== "object" || typeof node.type !== "string") return node;
  for (const key of Object.keys(node)) node[key] = mend(node[key]);
  if (node.type === "BinaryExpression" && node.operator.value === "**" && node.left.type === "TestExpression" && isCallOf(node.right, TEST_ARGS_FN)) {
    return Object.assign(node.left, { args: node.right.args });
  }
  if (node.type === "For" && node.body[0]?.type === "Identifier" && node.body[0].value === RECURSIVE_MARK) return Object.assign(node, { body: node.body.slice(1), recursive: true });
  const mark = node.type === "If" && node.test.type === "Identifier" && (node.test.value as string).match(/^__ollamats_with_(\d+)__$/);
  if (mark) {
    const n = Number(mark[1]);
    return { type: SCOPED_BLOCK, sets: node.body.slice(0, n), body: node.body.slice(n) };
  }
  return node;
}
const isCallOf = (node: Node, name: string): boolean => node.type === "CallExpression" && node.callee.type === "Identifier" && node.callee.value === name;
