// Port of fmt's doPrintf: flags, width/precision (also from '*' operands), explicit argument
// indexes ("%[2]d"), and the %!verb(MISSING) / %!(EXTRA ...) / %!(NOVERB) / BADWIDTH markers.

import { Printer, noFlags } from "./fmt.js";
import { kindOf, numberValue, typeName } from "./values.js";

/** fmt.Sprintf. */
export function sprintf(format: string, args: readonly unknown[]): string {
  const p = new Printer();
  doPrintf(p, format, [...args]);
  return p.buf;
}

function doPrintf(p: Printer, format: string, args: unknown[]): void {
  let argNum = 0;
  let afterIndex = false;
  let reordered = false;
  let goodArgNum = true;
  const end = format.length;
  // fmt's argNumber: handles "[n]", sets afterIndex to whether one was found.
  const argNumber = (i: number): number => {
    afterIndex = false;
    if (i >= end || format[i] !== "[") return i;
    reordered = true;
    const close = format.indexOf("]", i + 1);
    if (format.length - i < 3 || close < 0) {
      goodArgNum = false;
      return i + 1;
    }
    const txt = format.slice(i + 1, close);
    const n = /^\d+$/.test(txt) && Number(txt) <= 1e6 ? Number(txt) : NaN;
    if (Number.isNaN(n)) {
      goodArgNum = false;
      return close + 1;
    }
    if (n >= 1 && n <= args.length) argNum = n - 1;
    else goodArgNum = false;
    afterIndex = true;
    return close + 1;
  };
  const parseNum = (i: number): [number | undefined, number] => {
    let j = i;
    while (j < end && format[j]! >= "0" && format[j]! <= "9") j++;
    if (j === i) return [undefined, i];
    const n = Number(format.slice(i, j));
    return [n > 1e6 ? undefined : n, j];
  };
  const intArg = (): number | undefined => {
    if (argNum >= args.length) return undefined;
    const a = args[argNum++];
    if (kindOf(a) !== "int") return undefined;
    const n = numberValue(a);
    return n > 1e6 || n < -1e6 ? undefined : n;
  };
  let i = 0;
  while (i < end) {
    goodArgNum = true;
    const pct = format.indexOf("%", i);
    if (pct < 0) {
      p.buf += format.slice(i);
      break;
    }
    p.buf += format.slice(i, pct);
    i = pct + 1;
    p.f = noFlags();
    const f = p.f;
    flags: for (; i < end; i++) {
      switch (format[i]) {
        case "#":
          f.sharp = true;
          break;
        case "0":
          f.zero = !f.minus;
          break;
        case "+":
          f.plus = true;
          break;
        case "-":
          f.minus = true;
          f.zero = false;
          break;
        case " ":
          f.space = true;
          break;
        default:
          break flags;
      }
    }
    i = argNumber(i);
    if (i < end && format[i] === "*") {
      i++;
      f.wid = intArg();
      if (f.wid === undefined) p.buf += "%!(BADWIDTH)";
      else if (f.wid < 0) {
        f.wid = -f.wid;
        f.minus = true;
        f.zero = false;
      }
      afterIndex = false;
    } else {
      [f.wid, i] = parseNum(i);
      if (afterIndex && f.wid !== undefined) goodArgNum = false;
    }
    if (i + 1 < end && format[i] === ".") {
      i++;
      if (afterIndex) goodArgNum = false;
      i = argNumber(i);
      if (i < end && format[i] === "*") {
        i++;
        f.prec = intArg();
        if (f.prec !== undefined && f.prec < 0) f.prec = undefined;
        if (f.prec === undefined) p.buf += "%!(BADPREC)";
        afterIndex = false;
      } else {
        [f.prec, i] = parseNum(i);
        if (f.prec === undefined) f.prec = 0;
      }
    }
    if (!afterIndex) i = argNumber(i);
    if (i >= end) {
      p.buf += "%!(NOVERB)";
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i) ?? 0);
    i += verb.length;
    if (verb === "%") p.buf += "%";
    else if (!goodArgNum) p.buf += "%!" + verb + "(BADINDEX)";
    else if (argNum >= args.length) p.buf += "%!" + verb + "(MISSING)";
    else {
      if (verb === "v") {
        f.sharpV = f.sharp;
        f.sharp = false;
        f.plusV = f.plus;
        f.plus = false;
      }
      p.printArg(args[argNum++], verb);
    }
  }
  if (!reordered && argNum < args.length) {
    p.f = noFlags();
    p.buf += "%!(EXTRA ";
    args.slice(argNum).forEach((a, k) => {
      if (k > 0) p.buf += ", ";
      if (a === null || a === undefined) p.buf += "<nil>";
      else {
        p.buf += typeName(a) + "=";
        p.printArg(a, "v");
      }
    });
    p.buf += ")";
  }
}
