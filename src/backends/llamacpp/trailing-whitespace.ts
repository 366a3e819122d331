// Grammar outputs end with whitespace the grammar allows but nobody wants: it is held back while
// it may be the end, and dropped if it is. A grammar-bound model can emit whitespace without end
// (JSON allows any amount between tokens), so each piece costs its own length: the run held so
// far is never scanned again (a regex on the held run plus the piece took the square of the run).

const WHITESPACE = /\s/u;

export class TrailingWhitespace {
  private held: string[] = [];

  /** The text that is safe to send now: everything up to the piece's last non-whitespace
   *  character, with the whitespace held before it. */
  push(text: string): string {
    let end = text.length;
    while (end > 0 && WHITESPACE.test(text[end - 1]!)) end--;
    // A surrogate pair is never whitespace, so a cut between its halves cannot happen.
    if (end === 0) {
      if (text) this.held.push(text);
      return "";
    }
    const out = this.held.join("") + text.slice(0, end);
    this.held = end < text.length ? [text.slice(end)] : [];
    return out;
  }
}
