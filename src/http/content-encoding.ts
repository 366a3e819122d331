// A response body decoded as its Content-Encoding says. Nothing asks for compression, but a proxy
// in front of an engine (nginx with gzip on, a CDN) may compress anyway. Decoding happens as the
// body is read, so the readers' limits hold for what it decodes to.
import { pipeline, type Readable } from "node:stream";
import zlib from "node:zlib";
import { discardBody } from "./bounded-body.js";

const DECODERS: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: zlib.createGunzip,
  "x-gzip": zlib.createGunzip,
  deflate: zlib.createInflate,
  br: zlib.createBrotliDecompress,
};

/** More codings than this on one body is no proxy's doing: refused as unreadable. */
const MAX_CODINGS = 2;

export class UnknownEncodingError extends Error {}

/** `body` decoded (as it is where nothing was applied); for a coding this cannot undo the body
 *  is discarded and UnknownEncodingError thrown. */
export function decodedBody(body: Readable, contentEncoding: string | string[] | undefined): Readable {
  const codings = String(contentEncoding ?? "")
    .toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.length === 0) return body;
  if (codings.length > MAX_CODINGS || !codings.every((c) => Object.hasOwn(DECODERS, c))) {
    discardBody(body);
    throw new UnknownEncodingError(`a body in Content-Encoding '${codings.join(", ")}', which this server cannot read`);
  }
  // Codings apply in the order listed, so they come off in reverse.
  const decoders = codings.reverse().map((c) => (DECODERS[c] as () => Readable)());
  // A decoder destroyed (the reader stopped early) destroys the body, which closes the connection.
  return pipeline([body, ...decoders], () => undefined) as unknown as Readable;
}

/** A decoder's complaint about its input (zlib's Z_DATA_ERROR, brotli's ERR_…). */
export function isDecodeError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" && (code.startsWith("Z_") || (code.startsWith("ERR_") && (err as Error).message === "Decompression failed"));
}
