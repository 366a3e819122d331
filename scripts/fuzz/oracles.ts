// What must hold after every exchange: an answer (no hang, no dropped connection), no 5xx except
// the designed ones, no stack trace or JavaScript-internal error text in any answer, and an error
// status that says what went wrong. The daemon-wide checks (alive, no stall, RSS) are in run.ts.
import type { Answer, Request } from "./http.js";

export interface Violation {
  /** crash | stall | rss | 5xx | stack-trace | internal-error | no-message | hang | dropped | store | fixture */
  oracle: string;
  /** The step it was seen at ("create", "request", ...), when it belongs to one. */
  step?: string;
  detail: string;
}

export interface Step {
  label: string;
  req: Request;
  /** Run only when every earlier step of the case answered 2xx. */
  onlyIfOk?: boolean;
  /** A 5xx whose message matches is designed (docs/fuzzing.md says which and why). */
  designed5xx?: RegExp;
  /** May legitimately outlast the deadline (asks for unbounded generation, a slow registry). */
  mayRunLong?: boolean;
}

/** The one 503 Ollama designs: the load queue is full. */
export const QUEUE_FULL = /^server busy, please try again\. {2}maximum pending requests exceeded$/;
/** A crafted model that create accepted and the runner could not load: a clean 500, as Ollama's. */
export const LOAD_ERROR = /^(failed to load model |llama runner process has terminated|model requires more system memory)/;
/** An option of the wrong JSON type: Ollama answers 500 with these words (reference §1.3). */
export const OPTION_TYPE = /^option "\w+" must be of (type (integer|float32|boolean|array)|an array of strings)$/;
/** A pull or push that cannot reach the registry (127.0.0.1:1): Ollama answers 500. */
export const REGISTRY_ERROR = /(ECONNREFUSED|connection refused|pull model manifest|max retries|registry|unreachable)/i;

const STACK = /(\n\s+at .+:\d+:\d+|\bat (?:async )?[\w$.<>]+ \((?:file:\/\/|node:|\/)[^)]*:\d+:\d+\)|node:internal\/|\/dist\/[\w/.-]+\.js:\d+)/;
/** Messages of JavaScript's own errors: the daemon let an exception through instead of a verdict. */
const INTERNAL = /(Maximum call stack size exceeded|Cannot read propert|Cannot set propert|(?<!something that )is not a function|is not iterable|is not defined|Invalid array length|Invalid string length|Invalid typed array length|Array buffer allocation failed|Cannot mix BigInt|Cannot convert|serialize a BigInt|\b(?:Type|Range|Reference|Syntax)Error\b|\[object Object\]|undefined \(reading)/i;
/** A designed message that reports NaN or Infinity computed something from unchecked input. */
const NON_FINITE = /\b(NaN|Infinity)\b/;

/** The error messages in an answer: `{"error"}` objects, OpenAI's `{"error":{"message"}}`, and
 *  the same in NDJSON or SSE lines of a stream. */
export function errorMessages(a: Answer): string[] {
  const text = a.body.subarray(0, 1 << 20).toString("utf8");
  const out: string[] = [];
  const take = (s: string) => {
    try {
      const v = JSON.parse(s) as { error?: unknown };
      if (typeof v?.error === "string") out.push(v.error);
      else if (v?.error && typeof v.error === "object" && typeof (v.error as { message?: unknown }).message === "string") out.push((v.error as { message: string }).message);
    } catch {
      // not JSON: plain text answers are checked as text
    }
  };
  take(text);
  if (out.length === 0) for (const line of text.split("\n")) if (line.includes("error")) take(line.replace(/^data: /, ""));
  return out;
}

const clip = (s: string, n = 200) => (s.length > n ? `${s.slice(0, n)}…` : s);

export function checkAnswer(step: Step, a: Answer): Violation[] {
  const v: Violation[] = [];
  const at = step.label;
  if (a.status === null) {
    if (a.deadline) {
      if (!step.mayRunLong) v.push({ oracle: "hang", step: at, detail: `no answer within the deadline (${a.ms} ms)` });
    } else if (!a.error?.startsWith("not sent")) {
      v.push({ oracle: "dropped", step: at, detail: `connection closed without an answer: ${a.error ?? "no status"}` });
    }
    return v;
  }
  if (a.deadline === "body" && !step.mayRunLong) v.push({ oracle: "hang", step: at, detail: `answer ${a.status} did not finish within the deadline (${a.ms} ms)` });
  const text = a.body.subarray(0, 1 << 20).toString("utf8");
  const messages = errorMessages(a);
  const message = messages[0] ?? text.trim();
  if (a.status >= 500) {
    const designed = (a.status === 503 && QUEUE_FULL.test(message)) || (a.status === 500 && OPTION_TYPE.test(message)) || (step.designed5xx?.test(message) && !INTERNAL.test(message) && !NON_FINITE.test(message));
    if (!designed) v.push({ oracle: "5xx", step: at, detail: `${a.status} ${clip(message)}` });
  }
  if (STACK.test(text)) v.push({ oracle: "stack-trace", step: at, detail: `${a.status}: ${clip(text.slice(Math.max(0, text.search(STACK) - 80)), 300)}` });
  // a 5xx already reported says the same
  for (const m of v.some((x) => x.oracle === "5xx") ? [] : messages) {
    if (INTERNAL.test(m)) {
      v.push({ oracle: "internal-error", step: at, detail: `${a.status} ${clip(m)}` });
      break;
    }
  }
  // Designed empty answers: Ollama's 403 for a foreign Host or Origin; Node's own 400 for broken
  // framing (bytes past a declared Content-Length shorter than the body are read as a second,
  // malformed request; Content-Length together with Transfer-Encoding is refused outright).
  const declared = step.req.headers["content-length"];
  const framed = step.req.headers["transfer-encoding"] === undefined
    ? declared === undefined || Number(declared) === (step.req.body?.length ?? 0)
    : declared === undefined;
  if (a.status >= 400 && a.status !== 403 && framed && step.req.method !== "HEAD" && message === "") {
    v.push({ oracle: "no-message", step: at, detail: `${a.status} with an empty body` });
  }
  return v;
}
