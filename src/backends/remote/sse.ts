// Server-sent events from the lines of LineSplitter's SSE mode (blank lines kept): the `data`
// of each event, its lines joined as the SSE spec says. Engines write one `data:` line an event;
// some put no blank line between events, so a first data line that stands alone (one JSON
// document) goes on at once. Comments (`: ping` keep-alives), `event:`, `id:` and `retry:` carry
// nothing an answer needs; llama-server's older streams report an error as an `error:` field.
import { MAX_LINE_CHARS } from "../../http/lines.js";
import { badAnswer } from "./dialect.js";

export interface SseHandler {
  /** One event's data; `alone`: a first data line not yet known to be the whole event, which
   *  may be handled (true) or left to be joined with the lines that follow (false). */
  data(text: string, alone: boolean): boolean;
  /** An `error:` field's value. */
  error(text: string): void;
}

export class SseEvents {
  private data: string[] = [];
  private chars = 0;

  constructor(private readonly on: SseHandler) {}

  line(line: string): void {
    if (line === "") return this.dispatch();
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    if (field === "error") return this.on.error(value);
    if (field !== "data") return;
    if (this.data.length === 0 && this.on.data(value, true)) return;
    this.data.push(value);
    // An event is bounded like a line: data lines without the blank line that ends them are not
    // gathered until memory ends.
    if ((this.chars += value.length + 1) > MAX_LINE_CHARS) throw badAnswer(`an event of more than ${MAX_LINE_CHARS} characters`);
  }

  /** The body ended: an event without its blank line still counts. */
  end(): void {
    this.dispatch();
  }

  private dispatch(): void {
    if (this.data.length === 0) return;
    const text = this.data.join("\n");
    this.data = [];
    this.chars = 0;
    this.on.data(text, false);
  }
}
