// Templates are code from model files (a GGUF's Jinja chat template, a Modelfile TEMPLATE) and
// from requests (`template`). They run under a budget of time and of size:
// - time: a loop over range(10^8) would hold the event loop for minutes. node:vm's timeout
//   interrupts any JavaScript on the stack, also the template engines' own functions called from
//   the script, and throws; the caller's state is untouched because rendering only builds a string.
//   The timeout is wall-clock time, but the budget is for running: on a busy machine a render of a
//   tenth of a millisecond was seen to take 184 ms from start to end, off the processor nearly all
//   of it, and past 250 ms a good request got a 400. So a render stopped having used less than the
//   budget of processor time, counted over its tries, runs again (at most RETRIES more times).
// - size: a string doubled in a loop reaches V8's limit (2^29 characters) in 28 steps, and a
//   padding width of 10^9 allocates a gigabyte in one call. The engines check what they build
//   against `renderLimits()`; the native builders they call (repeat, padStart, padEnd) are bounded
//   for the duration of the render — safe because rendering is synchronous, so no other code runs
//   while they are swapped.
import vm from "node:vm";

/** Rendering a real template takes well under a millisecond per message. */
export const TEMPLATE_BUDGET_MS = 250;
/** A conversation's render gets this much more per message and tool: a real template may look
 *  at every message from each one (Gemma 4's looks back for the previous speaker: 1,001 messages
 *  took 270 ms), so a long conversation must not be refused for its length ... */
export const TEMPLATE_BUDGET_PER_ITEM_MS = 0.5;
/** ... up to this: the render holds the daemon's event loop while it runs. */
export const TEMPLATE_BUDGET_MAX_MS = 3_000;

/** Tries after the first for a render the clock stopped before it had the budget's processor time. */
const RETRIES = 7;

export interface RenderLimits {
  /** Processor time the render may use (TEMPLATE_BUDGET_MS when not set). */
  ms?: number;
  /** The longest string a template may build, and its whole output. */
  chars: number;
  /** The longest list a template may build. */
  items: number;
}

const unbounded: RenderLimits = { chars: Infinity, items: Infinity };
let current = unbounded;

/** The size bounds of the render in progress (unbounded outside one). */
export const renderLimits = (): RenderLimits => current;

const context = vm.createContext(Object.create(null) as object);
const script = new vm.Script("run()");

export class TemplateTimeoutError extends Error {}
export class TemplateSizeError extends Error {}

export function tooLong(chars: number): TemplateSizeError {
  return new TemplateSizeError(`the template built text of ${chars} characters, more than the ${current.chars} this prompt may use`);
}

const native = { repeat: String.prototype.repeat, padStart: String.prototype.padStart, padEnd: String.prototype.padEnd };
const bounded = {
  repeat(this: string, count: number): string {
    const n = this.length * Number(count);
    if (n > current.chars) throw tooLong(n);
    return native.repeat.call(this, count);
  },
  padStart(this: string, length: number, fill?: string): string {
    if (Number(length) > current.chars) throw tooLong(Number(length));
    return native.padStart.call(this, length, fill);
  },
  padEnd(this: string, length: number, fill?: string): string {
    if (Number(length) > current.chars) throw tooLong(Number(length));
    return native.padEnd.call(this, length, fill);
  },
};

function swapBuilders(to: typeof native): void {
  String.prototype.repeat = to.repeat;
  String.prototype.padStart = to.padStart;
  String.prototype.padEnd = to.padEnd;
}

/** `fn()`, stopped with TemplateTimeoutError after `ms` of running and TemplateSizeError past `limits`. */
export function withinBudget<T>(fn: () => T, ms = TEMPLATE_BUDGET_MS, limits: RenderLimits = unbounded): T {
  const outer = current;
  current = limits;
  (context as { run?: () => T }).run = fn;
  if (limits !== unbounded) swapBuilders(bounded);
  try {
    let cpuMs = 0;
    for (let attempt = 0; ; attempt++) {
      const start = process.cpuUsage();
      try {
        return script.runInContext(context, { timeout: ms }) as T;
      } catch (err) {
        if ((err as { code?: string }).code !== "ERR_SCRIPT_EXECUTION_TIMEOUT") throw err;
        // the whole process's time: more than the render's own, so never a runaway retried for long
        const used = process.cpuUsage(start);
        cpuMs += (used.user + used.system) / 1000;
        if (cpuMs >= ms || attempt === RETRIES) throw err;
      }
    }
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      throw new TemplateTimeoutError(`the template ran longer than ${ms} ms and was stopped`);
    }
    // V8's own limits ("Invalid string length", "Invalid array length") say nothing to a user.
    if (err instanceof RangeError && /Invalid (string|array|typed array) length/.test(err.message)) {
      throw new TemplateSizeError("the template built a string or list larger than a prompt may be");
    }
    throw err;
  } finally {
    (context as { run?: () => T }).run = undefined;
    current = outer;
    if (outer === unbounded) swapBuilders(native);
  }
}
