// Templates are code from model files (a GGUF's Jinja chat template, a Modelfile TEMPLATE) and
// from requests (`template`); a loop over range(10^8) would hold the event loop for minutes. They
// run under a time budget: node:vm's timeout interrupts any JavaScript on the stack, also the
// template engines' own functions called from the script, and throws; the caller's state is
// untouched because rendering only builds a string.
import vm from "node:vm";

/** Rendering a real template takes well under a millisecond per message. */
export const TEMPLATE_BUDGET_MS = 250;

const context = vm.createContext(Object.create(null) as object);
const script = new vm.Script("run()");

export class TemplateTimeoutError extends Error {}

/** `fn()`, stopped with TemplateTimeoutError after `ms` of running. */
export function withinBudget<T>(fn: () => T, ms = TEMPLATE_BUDGET_MS): T {
  (context as { run?: () => T }).run = fn;
  try {
    return script.runInContext(context, { timeout: ms }) as T;
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      throw new TemplateTimeoutError(`the template ran longer than ${ms} ms and was stopped`);
    }
    throw err;
  } finally {
    (context as { run?: () => T }).run = undefined;
  }
}
