// Files read on a user's behalf (a Modelfile, its FROM and ADAPTER files, images in a prompt):
// only regular files. /dev/zero, a FIFO or a socket would be hashed forever or block the CLI
// (issue 13, row 9). The check is an fstat of the opened handle, so a path swapped after a stat
// cannot race it; the open is non-blocking, so a FIFO without a writer cannot hang the open
// itself. A file is read for exactly the size it had when opened: one that grows, shrinks or is
// rewritten meanwhile is an error, never a hang or a digest of something that is not the file.
import { constants, type Stats } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";

export class NotRegularFileError extends Error {
  override name = "NotRegularFileError";
  constructor(
    readonly file: string,
    readonly kind: string,
  ) {
    super(`${file} is ${kind}, not a regular file`);
  }
}

export class FileChangedError extends Error {
  override name = "FileChangedError";
  constructor(file: string, what: string) {
    super(`${file} ${what} while it was being read; try again once nothing is writing to it`);
  }
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO (named pipe)";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isSocket()) return "a socket";
  return "a special file";
}

// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. It changes nothing
// for a regular file. O_NOCTTY: a terminal device never becomes the CLI's controlling terminal.
const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

export interface RegularFile {
  handle: FileHandle;
  /** The path, for messages. */
  file: string;
  size: number;
  mtimeMs: number;
}

/** Opens `file` for reading if it is a regular file (symlinks followed); else NotRegularFileError. */
export async function openRegularFile(file: string): Promise<RegularFile> {
  let handle: FileHandle;
  try {
    handle = await open(file, FLAGS);
  } catch (err) {
    // Linux refuses to open a UNIX socket; some systems refuse a directory.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENXIO" || code === "EOPNOTSUPP") throw new NotRegularFileError(file, "a socket");
    if (code === "EISDIR") throw new NotRegularFileError(file, "a directory");
    throw err;
  }
  const st = await handle.stat();
  if (!st.isFile()) {
    await handle.close();
    throw new NotRegularFileError(file, kindOf(st));
  }
  return { handle, file, size: st.size, mtimeMs: st.mtimeMs };
}

const CHUNK = 1 << 20;

/** The file's bytes in chunks: exactly its size at open, then a check that it did not change. */
export async function* readChunks(f: RegularFile): AsyncGenerator<Buffer> {
  let pos = 0;
  while (pos < f.size) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, f.size - pos));
    const { bytesRead } = await f.handle.read(buf, 0, buf.length, pos);
    if (bytesRead === 0) throw new FileChangedError(f.file, `shrank from ${f.size} to ${pos} bytes`);
    pos += bytesRead;
    yield buf.subarray(0, bytesRead);
  }
  await checkUnchanged(f);
}

/** Throws FileChangedError if the file is no longer what it was when opened. */
export async function checkUnchanged(f: RegularFile): Promise<void> {
  // A byte past the end: the file grew (or, like /proc files, reports a size it does not have).
  const { bytesRead } = await f.handle.read(Buffer.alloc(1), 0, 1, f.size);
  if (bytesRead > 0) throw new FileChangedError(f.file, `grew past ${f.size} bytes`);
  const st = await f.handle.stat();
  if (st.size !== f.size || st.mtimeMs !== f.mtimeMs) throw new FileChangedError(f.file, "was modified");
}

/** Runs `use` on the opened regular file, closing it afterwards. */
export async function withRegularFile<T>(file: string, use: (f: RegularFile) => Promise<T>): Promise<T> {
  const f = await openRegularFile(file);
  try {
    return await use(f);
  } finally {
    await f.handle.close();
  }
}

/** The whole of a regular file. */
export async function readRegularFile(file: string): Promise<Buffer> {
  return withRegularFile(file, async (f) => {
    const chunks: Buffer[] = [];
    for await (const chunk of readChunks(f)) chunks.push(chunk);
    return Buffer.concat(chunks);
  });
}
