// Argument handling where yargs and cobra (Ollama's CLI library) differ.

import { suggestionsFor } from "./suggest.js";

export const NAME = "ollamats";

/** Commands made of subcommands (`ollamats service install`), with their subcommands. */
const GROUPS: Record<string, readonly string[]> = { service: ["install", "uninstall", "status", "print"] };

/** What a near miss may have meant: the commands (cobra offers `help` too) and the command's flags. */
export interface Candidates {
  commands?: readonly string[];
  flags?: readonly string[];
}

/** cobra's "Did you mean this?" block, appended to the error (empty when nothing is close). */
function didYouMean(typed: string, names: readonly string[] | undefined, prefix = ""): string {
  const close = suggestionsFor(typed, names ?? []);
  return close.length === 0 ? "" : `\n\nDid you mean this?\n${close.map((n) => `\t${prefix}${n}\n`).join("")}`;
}

/** Rewrite arguments yargs reads differently from cobra: `help [cmd]`, and a bare `--think`. */
export function normalizeArgs(args: string[]): string[] {
  const out = [...args];
  if (out[0] === "help") {
    out.shift();
    out.push("--help");
  }
  const end = out.indexOf("--");
  for (let i = 0; i < (end < 0 ? out.length : end); i++) if (out[i] === "--think") out[i] = "--think=true";
  return out;
}

/**
 * yargs' validation messages in cobra's words, on one line (plus cobra's suggestions for a
 * mistyped command or flag). `command` is the subcommand given, if any.
 */
export function usageError(msg: string, command: string | undefined, args: string[] = [], candidates: Candidates = {}): string {
  let m: RegExpExecArray | null;
  if ((m = /^Unknown arguments?: (.*)$/s.exec(msg))) {
    const first = (m[1] ?? "").split(", ")[0] ?? "";
    const kebab = first.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const long = args.find((a) => [first, kebab].some((f) => a === `--${f}` || a.startsWith(`--${f}=`) || a === `--no-${f}`));
    if (long !== undefined) {
      const flag = long.split("=")[0] ?? long;
      return `unknown flag: ${flag}${didYouMean(flag.replace(/^--(no-)?/, ""), candidates.flags, "--")}`;
    }
    const short = args.find((a) => /^-[^-]/.test(a) && a.slice(1).includes(first) && first.length === 1);
    if (short !== undefined) return `unknown shorthand flag: '${first}' in ${short}`;
    if (command === undefined) return `unknown command "${first}" for "${NAME}"${didYouMean(first, candidates.commands)}`;
    const group = GROUPS[command];
    if (group && args[args.indexOf(command) + 1] === first) return `unknown command "${first}" for "${NAME} ${command}"${didYouMean(first, group)}`;
    return `unexpected argument "${first}" for "${NAME} ${command}"`;
  }
  if ((m = /^Unknown command: (.*)$/.exec(msg))) return `unknown command "${m[1]}" for "${NAME}"${didYouMean(m[1] ?? "", candidates.commands)}`;
  if ((m = /^Not enough arguments following: (.*)$/.exec(msg))) {
    const flag = m[1] ?? "";
    return flag.length === 1 ? `flag needs an argument: '${flag}' in -${flag}` : `flag needs an argument: --${flag}`;
  }
  if ((m = /^Not enough non-option arguments: got (\d+), need at least (\d+)$/.exec(msg))) {
    return `requires at least ${m[2]} arg(s), only received ${m[1]}`;
  }
  if ((m = /^Too many non-option arguments: got (\d+), maximum of (\d+)$/.exec(msg))) {
    return `accepts at most ${m[2]} arg(s), received ${m[1]}`;
  }
  return msg.replace(/\s*\n\s*/g, " ").trim();
}
