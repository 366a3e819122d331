// A port of the parts of Go's fmt that templates reach: operand formatting for every verb
// (bad-verb markers, width/precision/flags, Stringer handling), Sprint and Sprintln.
// Format-string parsing (Sprintf) lives in printf.ts.

import { formatFloat, hex, isPrint, quote, quoteRune } from "./strconv.js";
import {
  GoStruct,
  kindOf,
  mapEntries,
  numberValue,
  stringerOf,
  typeName,
  unwrap,
  utf8Bytes,
} from "./values.js";

export interface Flags {
  plus: boolean;
  minus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  plusV: boolean; // %+v
  sharpV: boolean; // %#v
  wid?: number;
  prec?: number;
}

export const noFlags = (): Flags => ({ plus: false, minus: false, sharp: false, space: false, zero: false, plusV: false, sharpV: false });

/** fmt's pp: formats one operand at a time into buf according to the flags in f. */
export class Printer {
  buf = "";
  f: Flags = noFlags();
  erroring = false;

  private padding(n: number): string {
    return n > 0 ? (this.f.zero ? "0" : " ").repeat(n) : "";
  }

  pad(s: string): void {
    const w = this.f.wid;
    if (w === undefined) {
      this.buf += s;
      return;
    }
    const n = w - [...s].length;
    if (this.f.minus) this.buf += s + " ".repeat(Math.max(n, 0));
    else this.buf += this.padding(n) + s;
  }

  padString(s: string): void {
    const z = this.f.zero;
    this.f.zero = false;
    this.pad(s);
    this.f.zero = z;
  }

  badVerb(verb: string, arg: unknown): void {
    this.erroring = true;
    this.buf += "%!" + verb + "(";
    if (arg === null || arg === undefined) this.buf += "<nil>";
    else {
      this.buf += typeName(arg) + "=";
      this.printArg(arg, "v");
    }
    this.buf += ")";
    this.erroring = false;
  }

  fmtInteger(v: bigint, verb: string, arg: unknown): void {
    const f = this.f;
    let base = 10;
    let upper = false;
    switch (verb) {
      case "v":
      case "d":
        break;
      case "b":
        base = 2;
        break;
      case "o":
      case "O":
        base = 8;
        break;
      case "x":
        base = 16;
        break;
      case "X":
        base = 16;
        upper = true;
        break;
      case "c":
        this.pad(String.fromCodePoint(Number(v) >= 0 && Number(v) <= 0x10ffff ? Number(v) : 0xfffd));
        return;
      case "q":
        this.pad(quoteRune(Number(v), f.plus));
        return;
      case "U": {
        let s = "U+" + (v < 0n ? (-v).toString(16) : v.toString(16)).toUpperCase().padStart(f.prec ?? 4, "0");
        if (f.sharp && v >= 0n && v <= 0x10ffffn && isPrint(String.fromCodePoint(Number(v)))) {
          s += " '" + String.fromCodePoint(Number(v)) + "'";
        }
        this.padString(s);
        return;
      }
      default:
        this.badVerb(verb, arg);
        return;
    }
    const negative = v < 0n;
    let digits = (negative ? -v : v).toString(base);
    if (upper) digits = digits.toUpperCase();
    let prec = 0;
    if (f.prec !== undefined) {
      prec = f.prec;
      if (prec === 0 && v === 0n) {
        this.buf += " ".repeat(Math.max(f.wid ?? 0, 0));
        return;
      }
    } else if (f.zero && !f.minus && f.wid !== undefined) {
      prec = f.wid;
      if (negative || f.plus || f.space) prec--;
    }
    digits = digits.padStart(prec, "0");
    if (f.sharp) {
      if (base === 2) digits = "0b" + digits;
      else if (base === 8 && digits[0] !== "0") digits = "0" + digits;
      else if (base === 16) digits = (upper ? "0X" : "0x") + digits;
    }
    if (verb === "O") digits = "0o" + digits;
    if (negative) digits = "-" + digits;
    else if (f.plus) digits = "+" + digits;
    else if (f.space) digits = " " + digits;
    this.padString(digits);
  }

  fmtFloat(v: number, verb: string, arg: unknown): void {
    const f = this.f;
    let fmt: string;
    let prec: number;
    switch (verb) {
      case "v":
        fmt = "g";
        prec = -1;
        break;
      case "g":
      case "G":
        fmt = verb;
        prec = -1;
        break;
      case "e":
      case "E":
      case "f":
        fmt = verb;
        prec = 6;
        break;
      case "F":
        fmt = "f";
        prec = 6;
        break;
      default:
        this.badVerb(verb, arg);
        return;
    }
    if (f.prec !== undefined) prec = f.prec;
    let num = formatFloat(v, fmt, prec);
    if (num[0] !== "-" && num[0] !== "+") num = "+" + num;
    if (f.space && num[0] === "+" && !f.plus) num = " " + num.slice(1);
    if (num[1] === "I" || num[1] === "N") {
      if (num[1] === "N" && !f.space && !f.plus) num = num.slice(1);
      this.padString(num);
      return;
    }
    if (f.plus || num[0] !== "+") {
      if (f.zero && !f.minus && f.wid !== undefined && f.wid > num.length) {
        this.buf += num[0] + "0".repeat(f.wid - num.length) + num.slice(1);
        return;
      }
      this.pad(num);
      return;
    }
    this.pad(num.slice(1));
  }

  fmtString(s: string, verb: string, arg: unknown): void {
    switch (verb) {
      case "v":
        if (this.f.sharpV) this.padString(quote(s));
        else this.padString(s);
        return;
      case "s":
        this.padString(this.f.prec !== undefined ? [...s].slice(0, this.f.prec).join("") : s);
        return;
      case "x":
      case "X":
        this.fmtHex(utf8Bytes(s), verb === "X");
        return;
      case "q":
        if (this.f.sharp && !/[`\x00-\x08\x0a-\x1f\x7f\ufeff]/.test(s)) this.padString("`" + s + "`");
        else this.padString(quote(s, this.f.plus));
        return;
      default:
        this.badVerb(verb, arg);
    }
  }

  fmtHex(bytes: Uint8Array, upper: boolean): void {
    const parts = [...bytes].map((b) => {
      const h = hex(b, 2);
      return upper ? h.toUpperCase() : h;
    });
    const prefix = this.f.sharp ? (upper ? "0X" : "0x") : "";
    const s = this.f.space ? parts.map((p) => prefix + p).join(" ") : prefix + parts.join("");
    this.padString(s);
  }

  printArg(arg: unknown, verb: string): void {
    if (arg === null || arg === undefined) {
      if (verb === "T" || verb === "v") this.padString("<nil>");
      else this.badVerb(verb, arg);
      return;
    }
    if (verb === "T") {
      this.padString(typeName(arg));
      return;
    }
    this.printValue(arg, verb, 0);
  }

  handleMethods(v: unknown, verb: string): boolean {
    if (this.erroring) return false;
    const str = stringerOf(v);
    if (str && "vsxXq".includes(verb)) {
      this.fmtString(str(), verb, v);
      return true;
    }
    return false;
  }

  printValue(value: unknown, verb: string, depth: number): void {
    if (this.handleMethods(value, verb)) return;
    const u = unwrap(value);
    switch (kindOf(u)) {
      case "invalid":
      case "nil":
        // Only reachable below top level (printArg handles a nil operand): a nil interface element.
        this.padString("<nil>");
        return;
      case "bool":
        if (verb === "t" || verb === "v") this.padString(u ? "true" : "false");
        else this.badVerb(verb, value);
        return;
      case "int":
        this.fmtInteger(typeof u === "bigint" ? u : BigInt(u as number), verb, value);
        return;
      case "float":
        this.fmtFloat(numberValue(u), verb, value);
        return;
      case "string":
        this.fmtString(u as string, verb, value);
        return;
      case "bytes": {
        const b = u as Uint8Array;
        if (verb === "s" || verb === "q") {
          this.fmtString(new TextDecoder().decode(b), verb, value);
          return;
        }
        if (verb === "x" || verb === "X") {
          this.fmtHex(b, verb === "X");
          return;
        }
        this.buf += "[";
        b.forEach((x, i) => {
          if (i > 0) this.buf += " ";
          this.fmtInteger(BigInt(x), verb, x);
        });
        this.buf += "]";
        return;
      }
      case "slice":
        this.buf += "[";
        (u as unknown[]).forEach((e, i) => {
          if (i > 0) this.buf += " ";
          this.printValue(e, verb, depth + 1);
        });
        this.buf += "]";
        return;
      case "map":
        this.buf += "map[";
        mapEntries(u).forEach(([k, val], i) => {
          if (i > 0) this.buf += " ";
          this.printValue(k, verb, depth + 1);
          this.buf += ":";
          this.printValue(val, verb, depth + 1);
        });
        this.buf += "]";
        return;
      case "struct": {
        const s = u as GoStruct;
        if (s.type.pointer) {
          if (depth > 0) {
            this.padString("0xc000010000");
            return;
          }
          this.buf += "&";
        }
        this.buf += "{";
        s.type.fields.forEach((fd, i) => {
          if (i > 0) this.buf += " ";
          if (this.f.plusV || this.f.sharpV) this.buf += fd.name + ":";
          this.printValue(s.field(fd.name), verb, depth + 1);
        });
        this.buf += "}";
        return;
      }
      case "func":
        this.padString("0x0");
        return;
    }
  }
}

function isStringArg(a: unknown): boolean {
  return a !== null && a !== undefined && kindOf(a) === "string";
}

/** fmt.Sprint: spaces between operands when neither is a string. */
export function sprint(args: readonly unknown[]): string {
  const p = new Printer();
  let prevString = false;
  args.forEach((a, n) => {
    const isStr = isStringArg(a);
    if (n > 0 && !isStr && !prevString) p.buf += " ";
    p.f = noFlags();
    p.printArg(a, "v");
    prevString = isStr;
  });
  return p.buf;
}

/** fmt.Sprintln: always spaces, trailing newline. */
export function sprintln(args: readonly unknown[]): string {
  const p = new Printer();
  args.forEach((a, n) => {
    if (n > 0) p.buf += " ";
    p.f = noFlags();
    p.printArg(a, "v");
  });
  return p.buf + "\n";
}

/** fmt.Sprint of one value (%v). */
export function formatValue(v: unknown): string {
  return sprint([v]);
}

export { quote } from "./strconv.js";
