// What a registry's answer to a blob GET must look like before a byte of it is written: the
// status, Content-Range and Content-Length checked against the bytes asked for and the size the
// manifest gave, and the body's length while it arrives. Every mismatch is a final RegistryError
// (another try would get the same answer); only a plain 200 carrying the whole blob, from a server
// without Range support, is turned into NoRangeSupport, which switches the download to one stream.
import type { Dispatcher } from "undici";
import { discardBody, RegistryError } from "./client.js";

/** A 200 with the whole blob answered a range request: download in one stream instead. */
export class NoRangeSupport extends Error {
  override name = "NoRangeSupport";
  constructor(digest: string) {
    super(`the server of ${digest} does not support range requests`);
  }
}

type Headers = Dispatcher.ResponseData["headers"];

function header(headers: Headers, name: string): string | undefined {
  const h = headers[name];
  return Array.isArray(h) ? h[0] : h;
}

/** Content-Length, when the answer has one; a malformed one is a final error. */
export function contentLength(headers: Headers): number | undefined {
  const v = header(headers, "content-length");
  if (v === undefined) return undefined;
  if (!/^\d{1,16}$/.test(v.trim())) throw new RegistryError(`invalid Content-Length ${JSON.stringify(v.slice(0, 40))}`);
  return Number(v.trim());
}

/**
 * Check the answer to `Range: bytes=<start>-<end - 1>` of a `total`-byte blob: a 206 for exactly
 * that range (a 200 when the range is the whole blob) passes; a 200 whose body is the whole blob
 * throws NoRangeSupport; anything else throws a final RegistryError.
 */
export function checkRangeAnswer(status: number, headers: Headers, start: number, end: number, total: number, digest: string): void {
  const asked = `bytes ${start}-${end - 1} of ${digest}`;
  const length = contentLength(headers);
  if (status === 206) {
    const cr = header(headers, "content-range") ?? "";
    const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(cr.trim());
    if (!m || Number(m[1]) !== start || Number(m[2]) !== end - 1 || (m[3] !== "*" && Number(m[3]) !== total)) {
      throw new RegistryError(`unexpected Content-Range ${JSON.stringify(cr.slice(0, 100))} for ${asked} (${total} bytes)`);
    }
    if (length !== undefined && length !== end - start) {
      throw new RegistryError(`Content-Length ${length} does not match Content-Range ${JSON.stringify(cr)} for ${asked}`);
    }
    return;
  }
  if (status === 200) {
    if (length !== undefined && length !== total) {
      throw new RegistryError(`registry answered the range request for ${asked} with a plain 200 of ${length} bytes; the blob is ${total} bytes`);
    }
    if (start !== 0 || end !== total) throw new NoRangeSupport(digest);
    return;
  }
  throw new RegistryError(`unexpected status code ${status} for ${asked}`);
}

/** Check the answer to a plain GET of a whole `total`-byte blob. */
export function checkWholeAnswer(status: number, headers: Headers, total: number, digest: string): void {
  if (status !== 200) throw new RegistryError(`unexpected status code ${status} for ${digest}`);
  const length = contentLength(headers);
  if (length !== undefined && length !== total) throw new RegistryError(`registry sent a body of ${length} bytes for ${digest}; the manifest says ${total} bytes`);
}

/** Run a check of an answer's status and headers; a failed check throws its body away. */
export function checked(res: Dispatcher.ResponseData, check: () => void): void {
  try {
    check();
  } catch (e) {
    discardBody(res);
    throw e;
  }
}

export function bodyTooLong(digest: string, asked: number): RegistryError {
  return new RegistryError(`the registry sent more than the ${asked} bytes asked for of ${digest}`);
}

export function bodyTooShort(digest: string, got: number, asked: number): RegistryError {
  return new RegistryError(`the registry's answer for ${digest} ended after ${got} of ${asked} bytes`);
}
