// A streamed body (NDJSON or SSE) cut into lines, synchronously: every complete line of one
// read comes out of one push, so its events are parsed in one pass. Used by the remote backend
// (an upstream's stream) and the API client (the daemon's), neither of which trusts the other
// end to end its lines.

/** The longest line kept: an event is a token or a tool call, not megabytes. */
export const MAX_LINE_CHARS = 8 * 1024 * 1024;

export class LineTooLongError extends Error {
  constructor(readonly limit: number) {
    super(`a line of the stream exceeds ${limit} characters`);
  }
}

export class LineSplitter {
  /** The line begun but not ended: its pieces, joined once its end comes, so a line that arrives
   *  in many reads costs time in its length, not in its length times the reads. */
  private pieces: string[] = [];
  private pending = 0;
  private readonly decoder = new TextDecoder();
  /** SSE: the last read ended in CR, so an LF that starts the next one ends no line of its own. */
  private afterCR = false;

  /** `maxLine`: a line still without its end past this many characters is an error, so a
   *  server sending one without end costs no more memory than that. `sse`: the line ends of an
   *  event stream (CRLF, LF or a lone CR), and blank lines kept, as they end its events. */
  constructor(
    private readonly maxLine = MAX_LINE_CHARS,
    private readonly sse = false,
  ) {}

  /** The complete lines this chunk ends (CR of CRLF dropped), blank ones only in SSE mode. */
  push(chunk: Uint8Array | string): string[] {
    let piece = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.afterCR && piece !== "") {
      this.afterCR = false;
      if (piece.charCodeAt(0) === 10) piece = piece.slice(1);
    }
    if (piece.indexOf("\n") === -1 && (!this.sse || piece.indexOf("\r") === -1)) {
      this.pieces.push(piece);
      this.pending += piece.length;
      if (this.pending > this.maxLine) {
        this.drop();
        throw new LineTooLongError(this.maxLine);
      }
      return [];
    }
    const text = this.pieces.length > 0 ? this.pieces.join("") + piece : piece;
    this.drop();
    const lines: string[] = [];
    const breaks = this.sse ? /\r\n?|\n/g : /\r?\n/g;
    let start = 0;
    for (let m = breaks.exec(text); m !== null; m = breaks.exec(text)) {
      const line = text.slice(start, m.index);
      if (this.sse || line.trim() !== "") lines.push(line);
      start = breaks.lastIndex;
    }
    this.afterCR = this.sse && text.charCodeAt(text.length - 1) === 13;
    const rest = text.slice(start);
    if (rest.length > this.maxLine) throw new LineTooLongError(this.maxLine);
    if (rest) {
      this.pieces.push(rest);
      this.pending = rest.length;
    }
    return lines;
  }

  /** What is left at the end of the body: a last line without its newline. */
  end(): string[] {
    const last = (this.pieces.join("") + this.decoder.decode()).replace(/\r$/, "");
    this.drop();
    return last.trim() !== "" ? [last] : [];
  }

  private drop(): void {
    this.pieces = [];
    this.pending = 0;
  }
}
