// What a synchronous check refused with: the ApiError's status and message (unit tests of the
// request translations).
import { ApiError } from "../../src/daemon/errors.js";

export function fails(fn: () => unknown): { status: number; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error("expected an error");
}
