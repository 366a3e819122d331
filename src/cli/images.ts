// Whether a model takes files (cmd.go MultiModal), and the files named in a prompt for such models
// (interactive.go extractFileNames/extractFileData):
// paths that start with `/`, `./`, `\` or a drive letter and end in .jpg/.jpeg/.png/.webp/.wav are
// read (at most 100 MB, type sniffed from the content), taken out of the text and sent as images.
import path from "node:path";
import type { ShowResponse } from "../api/types.js";
import { openRegularFile, readChunks, type RegularFile } from "../fs/regular-file.js";

/** Whether /api/show describes a model that takes images or audio (cmd.go's MultiModal). */
export function isMultiModal(info: ShowResponse & { projector_info?: Record<string, unknown> }): boolean {
  const caps = info.capabilities ?? [];
  if (caps.includes("vision") || caps.includes("audio")) return true;
  if (info.projector_info && Object.keys(info.projector_info).length > 0) return true;
  return Object.keys((info.model_info as Record<string, unknown> | undefined | null) ?? {}).some((k) => k.includes(".vision."));
}

const FILE_PATTERN = /(?:[a-zA-Z]:)?(?:\.\/|\/|\\)[\S\\ ]+?\.(?:jpg|jpeg|png|webp|wav)\b/gi;
const MAX_BYTES = 100 * 1024 * 1024;

/** The candidate file paths in a prompt, as written (escapes still in). */
export function extractFileNames(input: string): string[] {
  return input.match(FILE_PATTERN) ?? [];
}

/** Undo shell-style escapes in a dragged-in path (`\ ` → space, `\(` → `(`, …). */
export function normalizeFilePath(p: string): string {
  return p.replace(/\\([ ()[\]{}$&;'\\*?~])/g, "$1");
}

/** Go's http.DetectContentType, for the types accepted here (and a generic answer otherwise). */
export function sniffContentType(head: Buffer): string {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
  if (head.subarray(0, 4).toString("latin1") === "RIFF") {
    if (head.subarray(8, 14).toString("latin1") === "WEBPVP") return "image/webp";
    if (head.subarray(8, 12).toString("latin1") === "WAVE") return "audio/wave";
  }
  if (head.subarray(0, 6).toString("latin1") === "GIF87a" || head.subarray(0, 6).toString("latin1") === "GIF89a") return "image/gif";
  const text = head.every((b) => b === 0x09 || b === 0x0a || b === 0x0d || (b >= 0x20 && b !== 0x7f));
  return text ? "text/plain; charset=utf-8" : "application/octet-stream";
}

const ALLOWED = ["image/jpeg", "image/jpg", "image/png", "image/webp", "audio/wave"];

/** Read one regular file as an attachment; undefined when it does not exist. */
export async function readAttachment(file: string): Promise<Buffer | undefined> {
  let f: RegularFile;
  try {
    f = await openRegularFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw err;
  }
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await f.handle.read(head, 0, 512, 0);
    const type = sniffContentType(head.subarray(0, bytesRead));
    if (!ALLOWED.includes(type)) throw new Error(`invalid file type: ${type}`);
    if (f.size > MAX_BYTES) throw new Error("file size exceeds maximum limit (100MB)");
    const chunks: Buffer[] = [];
    for await (const chunk of readChunks(f)) chunks.push(chunk);
    return Buffer.concat(chunks);
  } finally {
    await f.handle.close();
  }
}

/**
 * Take the files out of a prompt: the remaining text and the files' contents (base64), printing
 * `Added image '<path>'` (or audio) on stderr for each. Paths that do not exist stay in the text.
 */
export async function extractFileData(input: string, note: (line: string) => void = (l) => void process.stderr.write(l)): Promise<{ text: string; images: string[] }> {
  const images: string[] = [];
  let text = input;
  for (const fp of extractFileNames(input)) {
    const nfp = normalizeFilePath(fp);
    let data: Buffer | undefined;
    try {
      data = await readAttachment(nfp);
    } catch (err) {
      note(`Couldn't process file: ${JSON.stringify((err as Error).message)}\n`);
      throw err;
    }
    if (data === undefined) continue;
    note(`${path.extname(nfp).toLowerCase() === ".wav" ? "Added audio" : "Added image"} '${nfp}'\n`);
    text = text.split(`'${nfp}'`).join("").split(`'${fp}'`).join("").split(fp).join("");
    images.push(data.toString("base64"));
  }
  return { text: text.trim(), images };
}
