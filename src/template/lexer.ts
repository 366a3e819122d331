// Port of Go's text/template/parse/lex.go (Go 1.22+): trim markers, comments, break/continue,
// '=' assignment, newlines inside actions. Positions are UTF-16 offsets into the input; the
// parser converts them to Go's byte columns for messages.

export enum ItemType {
  Error, Bool, Char, CharConstant, Comment, Complex, Assign, Declare, EOF, Field, Identifier, LeftDelim, LeftParen,
  Number, Pipe, RawString, RightDelim, RightParen, Space, String, Text, Variable,
  Keyword, // keywords after this point
  Block, Break, Continue, Dot, Define, Else, End, If, Nil, Range, Template, With,
}

export interface Item {
  typ: ItemType;
  pos: number;
  val: string;
  line: number;
}

const KEYWORDS: Record<string, ItemType> = {
  ".": ItemType.Dot,
  block: ItemType.Block,
  break: ItemType.Break,
  continue: ItemType.Continue,
  define: ItemType.Define,
  else: ItemType.Else,
  end: ItemType.End,
  if: ItemType.If,
  range: ItemType.Range,
  nil: ItemType.Nil,
  template: ItemType.Template,
  with: ItemType.With,
};

/** Go's item.String(), used in "unexpected %s in %s" messages. */
export function itemString(i: Item): string {
  if (i.typ === ItemType.EOF) return "EOF";
  if (i.typ === ItemType.Error) return i.val;
  if (i.typ > ItemType.Keyword) return `<${i.val}>`;
  const chars = [...i.val];
  if (chars.length > 10) return goQuote(chars.slice(0, 10).join("")) + "...";
  return goQuote(i.val);
}

// Minimal strconv.Quote for token text (printable ASCII and common escapes).
function goQuote(s: string): string {
  return JSON.stringify(s).replace(/\\u00([0-9a-f]{2})/g, "\\x$1");
}

/** %#U formatting of a rune: U+0023 '#'. */
export function formatRuneU(r: string): string {
  const c = r.codePointAt(0) ?? 0;
  return "U+" + c.toString(16).toUpperCase().padStart(4, "0") + ` '${r}'`;
}

const LEFT_DELIM = "{{";
const RIGHT_DELIM = "}}";
const LEFT_COMMENT = "/*";
const RIGHT_COMMENT = "*/";

function isSpace(c: string | undefined): boolean {
  return c === " " || c === "\t" || c === "\r" || c === "\n";
}

function isAlphaNumeric(c: string | undefined): boolean {
  return c !== undefined && (c === "_" || /^[\p{L}\p{Nd}]$/u.test(c));
}

function hasLeftTrimMarker(s: string, at: number): boolean {
  return s[at] === "-" && isSpace(s[at + 1]);
}

function hasRightTrimMarker(s: string, at: number): boolean {
  return isSpace(s[at]) && s[at + 1] === "-";
}

type StateFn = ((l: Lexer) => StateFn) | null;

class Lexer {
  items: Item[] = [];
  pos = 0;
  start = 0;
  parenDepth = 0;
  private lineStarts: number[] = [0];

  constructor(readonly input: string) {
    for (let i = 0; i < input.length; i++) if (input[i] === "\n") this.lineStarts.push(i + 1);
  }

  lineAt(pos: number): number {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  /** Next code point (as a string) or undefined at EOF. */
  next(): string | undefined {
    if (this.pos >= this.input.length) {
      this.width = 0;
      return undefined;
    }
    const c = String.fromCodePoint(this.input.codePointAt(this.pos) ?? 0);
    this.width = c.length;
    this.pos += c.length;
    return c;
  }
  width = 0;
  backup(): void {
    this.pos -= this.width;
  }
  peek(): string | undefined {
    const c = this.next();
    this.backup();
    return c;
  }
  emit(typ: ItemType): void {
    this.items.push({ typ, pos: this.start, val: this.input.slice(this.start, this.pos), line: this.lineAt(this.start) });
    this.start = this.pos;
  }
  ignore(): void {
    this.start = this.pos;
  }
  accept(valid: string): boolean {
    const c = this.next();
    if (c !== undefined && valid.includes(c)) return true;
    this.backup();
    return false;
  }
  acceptRun(valid: string): void {
    for (;;) {
      const c = this.next();
      if (c === undefined || !valid.includes(c)) break;
    }
    this.backup();
  }
  errorf(msg: string): StateFn {
    this.items.push({ typ: ItemType.Error, pos: this.start, val: msg, line: this.lineAt(this.start) });
    return null;
  }
  atRightDelim(): { delim: boolean; trim: boolean } {
    if (hasRightTrimMarker(this.input, this.pos) && this.input.startsWith(RIGHT_DELIM, this.pos + 2)) {
      return { delim: true, trim: true };
    }
    return { delim: this.input.startsWith(RIGHT_DELIM, this.pos), trim: false };
  }
  atTerminator(): boolean {
    const r = this.peek();
    if (r === undefined || isSpace(r)) return true;
    if (".,|:)(".includes(r)) return true;
    return this.input.startsWith(RIGHT_DELIM, this.pos);
  }
  scanNumber(): boolean {
    this.accept("+-");
    let digits = "0123456789_";
    if (this.accept("0")) {
      if (this.accept("xX")) digits = "0123456789abcdefABCDEF_";
      else if (this.accept("oO")) digits = "01234567_";
      else if (this.accept("bB")) digits = "01_";
    }
    this.acceptRun(digits);
    if (this.accept(".")) this.acceptRun(digits);
    if (digits.length === 11 && this.accept("eE")) {
      this.accept("+-");
      this.acceptRun("0123456789_");
    }
    if (digits.length === 23 && this.accept("pP")) {
      this.accept("+-");
      this.acceptRun("0123456789_");
    }
    this.accept("i");
    if (isAlphaNumeric(this.peek())) {
      this.next();
      return false;
    }
    return true;
  }
}

function lexText(l: Lexer): StateFn {
  const x = l.input.indexOf(LEFT_DELIM, l.pos);
  if (x >= 0) {
    if (x > l.pos) {
      l.pos = x;
      let trim = 0;
      if (hasLeftTrimMarker(l.input, x + LEFT_DELIM.length)) {
        const text = l.input.slice(l.start, l.pos);
        trim = text.length - text.replace(/[ \t\r\n]+$/, "").length;
      }
      l.pos -= trim;
      if (l.pos > l.start) l.emit(ItemType.Text);
      l.pos += trim;
      l.ignore();
    }
    return lexLeftDelim;
  }
  l.pos = l.input.length;
  if (l.pos > l.start) l.emit(ItemType.Text);
  l.emit(ItemType.EOF);
  return null;
}

function lexLeftDelim(l: Lexer): StateFn {
  l.pos += LEFT_DELIM.length;
  const trim = hasLeftTrimMarker(l.input, l.pos);
  const after = trim ? 2 : 0;
  if (l.input.startsWith(LEFT_COMMENT, l.pos + after)) {
    l.pos += after;
    l.ignore();
    return lexComment;
  }
  l.emit(ItemType.LeftDelim);
  l.pos += after;
  l.ignore();
  l.parenDepth = 0;
  return lexInsideAction;
}

function lexComment(l: Lexer): StateFn {
  l.pos += LEFT_COMMENT.length;
  const i = l.input.indexOf(RIGHT_COMMENT, l.pos);
  if (i < 0) return l.errorf("unclosed comment");
  l.pos = i + RIGHT_COMMENT.length;
  const { delim, trim } = l.atRightDelim();
  if (!delim) return l.errorf("comment ends before closing delimiter");
  if (trim) l.pos += 2;
  l.pos += RIGHT_DELIM.length;
  if (trim) l.pos += leftTrimLength(l.input, l.pos);
  l.ignore();
  return lexText;
}

function leftTrimLength(s: string, at: number): number {
  let n = 0;
  while (isSpace(s[at + n])) n++;
  return n;
}

function lexRightDelim(l: Lexer): StateFn {
  const { trim } = l.atRightDelim();
  if (trim) {
    l.pos += 2;
    l.ignore();
  }
  l.pos += RIGHT_DELIM.length;
  l.emit(ItemType.RightDelim);
  if (trim) {
    l.pos += leftTrimLength(l.input, l.pos);
    l.ignore();
  }
  return lexText;
}

function lexInsideAction(l: Lexer): StateFn {
  const { delim } = l.atRightDelim();
  if (delim) {
    if (l.parenDepth === 0) return lexRightDelim;
    return l.errorf("unclosed left paren");
  }
  const r = l.next();
  if (r === undefined) return l.errorf("unclosed action");
  if (isSpace(r)) {
    l.backup();
    return lexSpace;
  }
  switch (r) {
    case "=":
      l.emit(ItemType.Assign);
      return lexInsideAction;
    case ":":
      if (l.next() !== "=") return l.errorf("expected :=");
      l.emit(ItemType.Declare);
      return lexInsideAction;
    case "|":
      l.emit(ItemType.Pipe);
      return lexInsideAction;
    case '"':
      return lexQuote;
    case "`":
      return lexRawQuote;
    case "$":
      return lexVariable;
    case "'":
      return lexChar;
    case "(":
      l.emit(ItemType.LeftParen);
      l.parenDepth++;
      return lexInsideAction;
    case ")":
      l.parenDepth--;
      if (l.parenDepth < 0) return l.errorf("unexpected right paren");
      l.emit(ItemType.RightParen);
      return lexInsideAction;
  }
  if (r === ".") {
    const c = l.input[l.pos];
    if (l.pos < l.input.length && (c! < "0" || c! > "9")) return lexField;
  }
  if (r === "." || r === "+" || r === "-" || (r >= "0" && r <= "9")) {
    l.backup();
    return lexNumber;
  }
  if (isAlphaNumeric(r)) {
    l.backup();
    return lexIdentifier;
  }
  const code = r.codePointAt(0) ?? 0;
  if (code <= 0x7e && code >= 0x20) {
    l.emit(ItemType.Char);
    return lexInsideAction;
  }
  return l.errorf(`unrecognized character in action: ${formatRuneU(r)}`);
}

function lexSpace(l: Lexer): StateFn {
  let n = 0;
  while (isSpace(l.peek())) {
    l.next();
    n++;
  }
  if (hasRightTrimMarker(l.input, l.pos - 1) && l.input.startsWith(RIGHT_DELIM, l.pos + 1)) {
    l.backup();
    if (n === 1) return lexRightDelim;
  }
  l.emit(ItemType.Space);
  return lexInsideAction;
}

function lexIdentifier(l: Lexer): StateFn {
  for (;;) {
    const r = l.next();
    if (isAlphaNumeric(r)) continue;
    l.backup();
    const word = l.input.slice(l.start, l.pos);
    if (!l.atTerminator()) return l.errorf(`bad character ${formatRuneU(r ?? "")}`);
    const kw = KEYWORDS[word];
    if (kw !== undefined && kw > ItemType.Keyword) l.emit(kw);
    else if (word[0] === ".") l.emit(ItemType.Field);
    else if (word === "true" || word === "false") l.emit(ItemType.Bool);
    else l.emit(ItemType.Identifier);
    return lexInsideAction;
  }
}

function lexField(l: Lexer): StateFn {
  return lexFieldOrVariable(l, ItemType.Field);
}

function lexVariable(l: Lexer): StateFn {
  if (l.atTerminator()) {
    l.emit(ItemType.Variable);
    return lexInsideAction;
  }
  return lexFieldOrVariable(l, ItemType.Variable);
}

function lexFieldOrVariable(l: Lexer, typ: ItemType): StateFn {
  if (l.atTerminator()) {
    l.emit(typ === ItemType.Variable ? ItemType.Variable : ItemType.Dot);
    return lexInsideAction;
  }
  let r: string | undefined;
  for (;;) {
    r = l.next();
    if (!isAlphaNumeric(r)) {
      l.backup();
      break;
    }
  }
  if (!l.atTerminator()) return l.errorf(`bad character ${formatRuneU(r ?? "")}`);
  l.emit(typ);
  return lexInsideAction;
}

function lexChar(l: Lexer): StateFn {
  for (;;) {
    let r = l.next();
    if (r === "\\") {
      r = l.next();
      if (r !== undefined && r !== "\n") continue;
      return l.errorf("unterminated character constant");
    }
    if (r === undefined || r === "\n") return l.errorf("unterminated character constant");
    if (r === "'") break;
  }
  l.emit(ItemType.CharConstant);
  return lexInsideAction;
}

function lexNumber(l: Lexer): StateFn {
  if (!l.scanNumber()) return l.errorf(`bad number syntax: ${goQuote(l.input.slice(l.start, l.pos))}`);
  const sign = l.peek();
  if (sign === "+" || sign === "-") {
    if (!l.scanNumber() || l.input[l.pos - 1] !== "i") {
      return l.errorf(`bad number syntax: ${goQuote(l.input.slice(l.start, l.pos))}`);
    }
    l.emit(ItemType.Complex);
    return lexInsideAction;
  }
  l.emit(ItemType.Number);
  return lexInsideAction;
}

function lexQuote(l: Lexer): StateFn {
  for (;;) {
    let r = l.next();
    if (r === "\\") {
      r = l.next();
      if (r !== undefined && r !== "\n") continue;
      return l.errorf("unterminated quoted string");
    }
    if (r === undefined || r === "\n") return l.errorf("unterminated quoted string");
    if (r === '"') break;
  }
  l.emit(ItemType.String);
  return lexInsideAction;
}

function lexRawQuote(l: Lexer): StateFn {
  for (;;) {
    const r = l.next();
    if (r === undefined) return l.errorf("unterminated raw quoted string");
    if (r === "`") break;
  }
  l.emit(ItemType.RawString);
  return lexInsideAction;
}

/** Lexes the whole input. The list ends with an EOF or Error item. */
export function lex(input: string): { items: Item[]; lineAt: (pos: number) => number } {
  const l = new Lexer(input);
  let state: StateFn = lexText;
  while (state) state = state(l);
  return { items: l.items, lineAt: (p) => l.lineAt(p) };
}
