// Request bodies sent compressed (`Content-Encoding`): gzip, deflate, br and zstd. The Codex CLI
// compresses its /v1/responses bodies with zstd (Ollama accepts that); other clients may use
// gzip. Decoded with Node's zlib and never past the body limit: a few kilobytes can expand a
// thousandfold. zstd needs Node 22.15 or newer (zlib.zstdDecompress); on an older Node such a
// body is refused with what to do. Codings listed together were applied in order and are
// undone last first.
import { promisify } from "node:util";
import zlib from "node:zlib";
import { ApiError, badRequest } from "./errors.js";

type Decoder = (buf: Buffer, opts: zlib.ZlibOptions) => Promise<Buffer>;

/** Node ≥ 22.15's zstd, when this Node has it (@types/node 20 does not know it). */
const nativeZstd = (zlib as unknown as { zstdDecompress?: (buf: Buffer, opts: zlib.ZlibOptions, cb: (err: Error | null, out: Buffer) => void) => void }).zstdDecompress;

const DECODERS: ReadonlyMap<string, Decoder> = new Map([
  ["gzip", promisify(zlib.gunzip)],
  ["x-gzip", promisify(zlib.gunzip)],
  ["deflate", promisify(zlib.inflate)],
  ["br", promisify(zlib.brotliDecompress) as Decoder],
  ...(nativeZstd ? [["zstd", promisify(nativeZstd) as Decoder] as const] : []),
]);

export const tooLarge = (limit: number) => badRequest(`request body too large (limit ${limit} bytes)`);

/** `body` with the codings of a Content-Encoding header undone, at most `limit` bytes. */
export async function decodeBody(body: Buffer, header: string | undefined, limit: number): Promise<Buffer> {
  const codings = (header ?? "")
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  let out = body;
  for (const coding of codings.reverse()) {
    const decode = DECODERS.get(coding);
    if (!decode && coding === "zstd") {
      throw new ApiError(415, `zstd-compressed request bodies need Node.js 22.15 or newer (this daemon runs on ${process.version}): upgrade Node.js, or turn off the client's request compression`);
    }
    if (!decode) throw new ApiError(415, `unsupported Content-Encoding "${coding}": send the body uncompressed, or compressed with gzip, deflate, br or zstd`);
    try {
      out = await decode(out, { maxOutputLength: limit });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(limit);
      throw badRequest(`the request body is not valid ${coding} data (Content-Encoding: ${header}): ${(err as Error).message}`);
    }
  }
  return out;
}
