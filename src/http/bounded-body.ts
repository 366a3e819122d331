// Response bodies from servers this process does not control (registries, upstream engines, the
// daemon OLLAMA_HOST names) are read up to a limit: a server that sends without end costs an
// error, never this process's memory.
/** A response body: undici's, or node:http's IncomingMessage (the CLI's transport). */
type Body = AsyncIterable<Buffer | Uint8Array> & { on(event: "error", listener: () => void): unknown; destroy(): unknown };

export class BodyTooLargeError extends Error {
  constructor(
    readonly limit: number,
    what: string,
  ) {
    super(`${what} exceeds ${limit} bytes`);
  }
}

const noop = () => undefined;

/**
 * Throws away a body that will not be read. The listener matters: destroying a body that has
 * already fully arrived emits RequestAbortedError with nobody listening, which kills the process.
 */
export function discardBody(body: Body): void {
  body.on("error", noop);
  body.destroy();
}

/** The whole body, or BodyTooLargeError (and the rest discarded) past `limit` bytes. */
export async function readBounded(body: Body, limit: number, what = "response body"): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const c of body) {
    n += c.length;
    if (n > limit) {
      discardBody(body);
      throw new BodyTooLargeError(limit, what);
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

export async function readBoundedText(body: Body, limit: number, what?: string): Promise<string> {
  return (await readBounded(body, limit, what)).toString("utf8");
}

export async function readBoundedJson(body: Body, limit: number, what?: string): Promise<unknown> {
  return JSON.parse(await readBoundedText(body, limit, what)) as unknown;
}

/** An error message needs no more than this of an error answer's body. */
export const ERROR_TEXT_LIMIT = 64 * 1024;

/** The first `limit` bytes of an error answer's body, as text; the rest is discarded. */
export async function readErrorText(body: Body, limit = ERROR_TEXT_LIMIT): Promise<string> {
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const c of body) {
    chunks.push(c.subarray(0, limit - n));
    n += c.length;
    if (n >= limit) {
      discardBody(body);
      break;
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}
