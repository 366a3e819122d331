// A streamed body (NDJSON or SSE) cut into lines, synchronously: every complete line of one
// upstream read comes out of one push, so its events are parsed in one pass.

/** The longest line kept: an event is a token or a tool call, not megabytes. */
export const MAX_LINE_CHARS = 8 * 1024 * 1024;

export class LineTooLongError extends Error {
  constructor(readonly limit: number) {
    super(`a line of the stream exceeds ${limit} characters`);
  }
}

export class LineSplitter {
  private rest = "";
  private readonly decoder = new TextDecoder();

  /** `maxLine`: a line still without its end past this many characters is an error, so a
   *  server sending one without end costs no more memory than that. */
  constructor(private readonly maxLine = MAX_LINE_CHARS) {}

  /** The complete, non-blank lines this chunk ends (CR of CRLF dropped). */
  push(chunk: Buffer | string): string[] {
    const text = this.rest + (typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true }));
    const lines: string[] = [];
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf("\n", start)) !== -1) {
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      if (end > start) {
        const line = text.slice(start, end);
        if (line.trim() !== "") lines.push(line);
      }
      start = nl + 1;
    }
    this.rest = text.slice(start);
    if (this.rest.length > this.maxLine) {
      this.rest = "";
      throw new LineTooLongError(this.maxLine);
    }
    return lines;
  }

  /** What is left at the end of the body: a last line without its newline. */
  end(): string[] {
    const last = this.rest + this.decoder.decode();
    this.rest = "";
    return last.trim() !== "" ? [last] : [];
  }
}
