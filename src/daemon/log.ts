// Leveled logging to stderr in Ollama's slog text style: time=… level=INFO msg="…" key=value, or
// one JSON object per line (slog's JSONHandler shape) with OLLAMATS_LOG_FORMAT=json, for log
// shippers. Levels follow Ollama's OLLAMA_DEBUG: unset/0 → INFO, 1/true → DEBUG, 2 → TRACE
// (level −4 × n). Under systemd stderr goes to the journal, under launchd to the plist's log file.
export interface Logger {
  trace(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** The lowest level written: 0 info, −4 debug, −8 trace (slog's numbers). */
  readonly level: number;
}

const LEVELS = { trace: -8, debug: -4, info: 0, warn: 4, error: 8 } as const;
export type LevelName = keyof typeof LEVELS;

/** slog's TextHandler quoting: a value is quoted when empty or when it has spaces, `"`, `=` or control characters. */
export function formatValue(v: unknown): string {
  const s = typeof v === "string" ? v : v instanceof Error ? v.message : toJson(v);
  return s === "" || /[\s"=\x00-\x1f\x7f]/.test(s) ? JSON.stringify(s) : s;
}

/** A field value as JSON; a bigint as its digits, and what JSON cannot hold (a cycle) as String(v), never a throw. */
function toJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? x.toString() : x)) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Debug lines are written (OLLAMA_DEBUG=1 or more): work that only feeds them can be skipped otherwise. */
export function debugEnabled(log: Pick<Logger, "level">): boolean {
  return log.level <= LEVELS.debug;
}

/** The minimum level for an OLLAMA_DEBUG value (0 info, 1 debug, 2 trace). */
export function levelFor(debug: number): number {
  return debug > 0 ? -4 * debug : LEVELS.info;
}

/** A duration in milliseconds the way Go prints a time.Duration, to microseconds: "512µs", "12.5ms", "1.234567s", "2m3.5s". */
export function formatDurationMs(ms: number): string {
  const us = Math.max(0, Math.round(ms * 1000));
  if (us < 1000) return `${us}µs`;
  const trim = (n: number, digits: number) => n.toFixed(digits).replace(/\.?0+$/, "");
  if (us < 1_000_000) return `${trim(us / 1000, 3)}ms`;
  const s = us / 1e6;
  if (s < 60) return `${trim(s, 6)}s`;
  const minutes = Math.floor(s / 60);
  const rest = `${trim(s - minutes * 60, 6)}s`;
  return minutes >= 60 ? `${Math.floor(minutes / 60)}h${minutes % 60}m${rest}` : `${minutes}m${rest}`;
}

export type LogFormat = "text" | "json";

export interface LoggerOptions {
  format?: LogFormat;
  /** Fields of the context a line is written in (the request's id), after the line's own. */
  context?: () => Record<string, unknown> | undefined;
}

/** A field value as JSON: errors by their message, bigints as strings. */
function jsonValue(v: unknown): unknown {
  if (v instanceof Error) return v.message;
  if (typeof v === "bigint") return v.toString();
  return v;
}

function textLine(time: string, level: string, msg: string, fields: [string, unknown][]): string {
  let line = `time=${time} level=${level} msg=${formatValue(msg)}`;
  for (const [k, v] of fields) line += ` ${k}=${formatValue(v)}`;
  return line + "\n";
}

function jsonLine(time: string, level: string, msg: string, fields: [string, unknown][]): string {
  const record: Record<string, unknown> = { time, level, msg };
  for (const [k, v] of fields) if (!Object.hasOwn(record, k)) record[k] = jsonValue(v);
  return JSON.stringify(record) + "\n";
}

/** debug: the OLLAMA_DEBUG level (0 info, 1 debug, 2 trace). */
export function createLogger(debug: number, write: (line: string) => void = (l) => void process.stderr.write(l), opts: LoggerOptions = {}): Logger {
  const min = levelFor(debug);
  const format = opts.format === "json" ? jsonLine : textLine;
  const log = (level: LevelName) => (msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[level] < min) return;
    const all: [string, unknown][] = [];
    for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined) all.push([k, v]);
    for (const [k, v] of Object.entries(opts.context?.() ?? {})) {
      if (v !== undefined && fields?.[k] === undefined) all.push([k, v]);
    }
    write(format(new Date().toISOString(), level.toUpperCase(), msg, all));
  };
  return {
    trace: log("trace"),
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    level: min,
  };
}
