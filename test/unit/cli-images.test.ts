// Files in prompts for multimodal models (interactive.go extractFileNames / extractFileData).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractFileData, extractFileNames, isMultiModal, normalizeFilePath, sniffContentType } from "../../src/cli/images.js";
import { ReplInput, USAGE_FILES, type SessionState } from "../../src/cli/repl-input.js";
import { parseParameterValue } from "../../src/registry/modelfile.js";
import type { ShowResponse } from "../../src/api/types.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-images-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]), Buffer.alloc(600)]);
const WAV = Buffer.concat([Buffer.from("RIFF\x58\x02\x00\x00WAVEfmt ", "latin1"), Buffer.alloc(600)]);

describe("file names in a prompt", () => {
  it("finds unix paths, escaped spaces and any-case extensions, and nothing else", () => {
    const input =
      " intro \n ./my\\ pics/a.png between ./not valid b.jpg between ./c.svg\n" +
      '/loose words /d.jpeg between /esc\\ aped/dir/e.png "./in quotes/f.JPG\n/g.webp and /h/i.WebP';
    const found = extractFileNames(input);
    expect(found).toHaveLength(7);
    ["a.png", "b.jpg", "d.jpeg", "e.png", "f.JPG", "g.webp", "i.WebP"].forEach((name, i) => expect(found[i]).toContain(name));
    expect(found.join(" ")).not.toContain("c.svg");
    expect(found[4]).not.toContain('"');
  });

  it("finds windows paths with drive letters", () => {
    const found = extractFileNames("see c:/users/me/one.png and d:\\some dir\\two.JPEG then E:\\x\\three.webp end");
    expect(found).toHaveLength(3);
    expect(found[0]).toMatch(/^c:.*one\.png$/);
    expect(found[1]).toMatch(/^d:.*two\.JPEG$/);
    expect(found[2]).toMatch(/^E:.*three\.webp$/);
  });

  it("undoes shell escapes", () => {
    expect(normalizeFilePath("/a\\ b/c\\(1\\)\\&\\'x\\'.png")).toBe("/a b/c(1)&'x'.png");
  });

  it("sniffs the accepted types", () => {
    expect(sniffContentType(JPEG)).toBe("image/jpeg");
    expect(sniffContentType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe("image/png");
    expect(sniffContentType(Buffer.from("RIFF\0\0\0\0WEBPVP8 ", "latin1"))).toBe("image/webp");
    expect(sniffContentType(WAV)).toBe("audio/wave");
    expect(sniffContentType(Buffer.from("hello"))).toBe("text/plain; charset=utf-8");
  });
});

describe("attaching files", () => {
  it("takes a quoted image path out of the text and attaches the file", async () => {
    const fp = path.join(dir, "img.jpg");
    await writeFile(fp, JPEG);
    const notes: string[] = [];
    const r = await extractFileData(`before '${fp}' after`, (l) => void notes.push(l));
    expect(r).toEqual({ text: "before  after", images: [JPEG.toString("base64")] });
    expect(notes).toEqual([`Added image '${fp}'\n`]);
  });

  it("attaches audio, and leaves paths that do not exist in the text", async () => {
    const fp = path.join(dir, "sample.wav");
    await writeFile(fp, WAV);
    const notes: string[] = [];
    const r = await extractFileData(`before ${fp} after /nope/missing.png`, (l) => void notes.push(l));
    expect(r.text).toBe("before  after /nope/missing.png");
    expect(r.images).toHaveLength(1);
    expect(notes).toEqual([`Added audio '${fp}'\n`]);
  });

  it("refuses a file that is not an image", async () => {
    const fp = path.join(dir, "fake.png");
    await writeFile(fp, "not an image");
    const notes: string[] = [];
    await expect(extractFileData(`look ${fp}`, (l) => void notes.push(l))).rejects.toThrow("invalid file type: text/plain; charset=utf-8");
    expect(notes[0]).toBe('Couldn\'t process file: "invalid file type: text/plain; charset=utf-8"\n');
  });
});

describe("REPL with a multimodal model", () => {
  const state = (multiModal: boolean): SessionState => ({
    model: "llava",
    parentModel: "",
    loadedMessages: [],
    messages: [],
    system: "",
    options: {},
    wordWrap: true,
    verbose: false,
    format: "",
    think: undefined,
    thinkExplicit: false,
    multiModal,
  });

  it("sends a line starting with an image path instead of calling it an unknown command", () => {
    const line = "/tmp/cat.png what is this?";
    const plain = new ReplInput(state(false), parseParameterValue).handleLine(line);
    expect(plain.stdout).toBe("Unknown command '/tmp/cat.png'. Type /? for help\n");
    const mm = new ReplInput(state(true), parseParameterValue);
    expect(mm.handleLine(line).effect).toEqual({ type: "chat" });
    expect(mm.state.messages).toEqual([{ role: "user", content: line }]);
  });

  it("mentions files in /? help", () => {
    const help = new ReplInput(state(true), parseParameterValue).handleLine("/?").stderr;
    expect(help).toContain('Use """ to begin a multi-line message.\n' + USAGE_FILES + "\n");
    expect(new ReplInput(state(false), parseParameterValue).handleLine("/?").stderr).not.toContain(USAGE_FILES);
  });

  it("recognises multimodal models as Ollama's CLI does", () => {
    const base = { modelfile: "", parameters: "", template: "", details: {}, capabilities: ["completion"] } as unknown as ShowResponse;
    expect(isMultiModal(base)).toBe(false);
    expect(isMultiModal({ ...base, capabilities: ["completion", "vision"] })).toBe(true);
    expect(isMultiModal({ ...base, capabilities: ["audio"] })).toBe(true);
    expect(isMultiModal({ ...base, model_info: { "clip.vision.block_count": 1 } } as ShowResponse)).toBe(true);
    expect(isMultiModal({ ...base, projector_info: { "general.architecture": "clip" } } as ShowResponse & { projector_info: Record<string, unknown> })).toBe(true);
  });
});
