// A positioned read of an exact length: fh.read may return fewer bytes than asked, so it is
// repeated until the length is read or the file ends.

import type { FileHandle } from "node:fs/promises";

/** Read `length` bytes at `position` into buf[0..]; false when the file ends first. */
export async function readFullyAt(fh: FileHandle, buf: Uint8Array, length: number, position: number): Promise<boolean> {
  for (let got = 0; got < length; ) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) return false;
    got += bytesRead;
  }
  return true;
}
