// Leveled logging to stderr in Ollama's slog text style: time=… level=INFO source=… msg="…".
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  readonly level: number;
}

const LEVELS = { debug: -4, info: 0, warn: 4, error: 8 } as const;

function fmt(v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return /[\s"=]/.test(s) || s === "" ? JSON.stringify(s) : s;
}

/** debug: OLLAMA_DEBUG level (0 info, 1 debug, 2 trace). */
export function createLogger(debug: number, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const min = debug >= 1 ? LEVELS.debug : LEVELS.info;
  const log = (level: keyof typeof LEVELS) => (msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[level] < min) return;
    let line = `time=${new Date().toISOString()} level=${level.toUpperCase()} msg=${fmt(msg)}`;
    for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined) line += ` ${k}=${fmt(v)}`;
    write(line + "\n");
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error"), level: min };
}
