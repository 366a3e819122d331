// The command lines most typed, and the ones the start-up budget is measured on, taken without
// yargs (importing it costs as much as starting Node): `-v`, `list`/`ls`, `ps` and `run MODEL
// [PROMPT...]` with no flags at all. Anything else (a flag, help, another command, a mistake) goes
// to yargs, so what the fast path accepts, yargs would read the same way.

export type FastRoute =
  | { kind: "version" }
  | { kind: "list"; prefix?: string }
  | { kind: "ps"; prefix?: string }
  | { kind: "run"; model: string; prompt: string[] };

/** The route for `args`, or undefined when yargs must read them. */
export function fastRoute(args: readonly string[]): FastRoute | undefined {
  if (args.length === 1 && (args[0] === "-v" || args[0] === "--version")) return { kind: "version" };
  // a flag (or `--`) anywhere, or `help` as a command, is yargs' to read
  if (args.some((a) => a.startsWith("-"))) return undefined;
  const [command, ...rest] = args;
  switch (command) {
    case "list":
    case "ls":
    case "ps":
      if (rest.length > 1) return undefined;
      return { kind: command === "ps" ? "ps" : "list", ...(rest[0] !== undefined ? { prefix: rest[0] } : {}) };
    case "run": {
      const [model, ...prompt] = rest;
      return model === undefined ? undefined : { kind: "run", model, prompt };
    }
    default:
      return undefined;
  }
}

/** Run a fast route; each loads only its own command's module. */
export async function runFast(route: FastRoute): Promise<void> {
  switch (route.kind) {
    case "version":
      return (await import("./print-version.js")).printVersion();
    case "list":
      return (await import("./commands/list.js")).listModels({ ...(route.prefix !== undefined ? { prefix: route.prefix } : {}) });
    case "ps":
      return (await import("./commands/ps.js")).listRunning({ ...(route.prefix !== undefined ? { prefix: route.prefix } : {}) });
    case "run":
      return (await import("./commands/run.js")).runModel({ model: route.model, prompt: route.prompt });
  }
}
