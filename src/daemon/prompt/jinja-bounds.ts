// Bounds installed into the Jinja engine (@huggingface/jinja) once, at import: what a chat template
// builds may not outgrow the render's limits (render-budget.ts). The engine has no hooks, so two of
// its methods are wrapped; both checks cost a comparison per evaluated node.
import { Environment, Interpreter } from "@huggingface/jinja";
import { renderLimits, tooLong, TemplateSizeError } from "./render-budget.js";

/** Jinja's range(), bounded: the engine builds the whole list first (range(10^8) held 250–600 MB
 *  after the time budget stopped it), and a template may not replace a global, so the engine's own
 *  registration of `range` is swapped for this one. Real templates count messages or tools. */
export const RANGE_MAX = 10_000;
export function boundedRange(start: number, stop?: number, step = 1): number[] {
  const [a, b] = stop === undefined ? [0, start] : [start, stop];
  if (![a, b, step].every(Number.isFinite) || step === 0) throw new Error("range() needs finite numbers and a step other than 0");
  const n = Math.max(0, Math.ceil((b - a) / step));
  if (n > RANGE_MAX) throw new Error(`range() of ${n} numbers is more than the ${RANGE_MAX} a chat template may use`);
  // a plain loop: Array.from with a callback was a sixth of a quadratic template's time (Gemma 4)
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = a + i * step;
  return out;
}
const engineSet = Environment.prototype.set;
Environment.prototype.set = function (this: Environment, name: string, value: unknown) {
  return engineSet.call(this, name, name === "range" && typeof value === "function" ? boundedRange : value);
};

/** Every value the interpreter produces (a `~` or `+` of strings, a joined or added list, a block's
 *  output) is measured against the limits: string doubling in a loop stops at the limit, not at
 *  V8's 2^29 characters after a gigabyte was spent. */
const engineEvaluate = Interpreter.prototype.evaluate;
Interpreter.prototype.evaluate = function (this: Interpreter, ...args: Parameters<Interpreter["evaluate"]>) {
  const result = engineEvaluate.apply(this, args);
  const value: unknown = result.value;
  const limits = renderLimits();
  if (typeof value === "string") {
    if (value.length > limits.chars) throw tooLong(value.length);
  } else if (Array.isArray(value) && value.length > limits.items) {
    throw new TemplateSizeError(`the template built a list of ${value.length} items, more than the ${limits.items} this prompt may use`);
  }
  return result;
};
