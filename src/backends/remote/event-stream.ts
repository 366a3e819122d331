// One streamed upstream answer as batches of events: each upstream read is cut into lines and
// parsed in one pass (dialect.ts's StreamReader), and its events go on as one batch. Reads happen
// only as the consumer asks for the next batch (back-pressure reaches the upstream's socket).
import type { Readable } from "node:stream";
import type { RunnerEvent } from "../backend.js";
import type { StreamReader } from "./dialect.js";
import { EngineError } from "../errors.js";
import { LineSplitter, LineTooLongError, MAX_LINE_CHARS } from "../../http/lines.js";

/** Bytes read past the final event, at most, to hand the connection back for reuse. */
const TAIL_LIMIT = 64 * 1024;

export class UpstreamEvents {
  private readonly chunks: AsyncIterator<Buffer>;
  private readonly lines: LineSplitter;
  private closed = false;
  /** An error the upstream reported after other events of the same read: those go first. */
  private failure: { err: unknown } | undefined;

  constructor(
    private readonly body: Readable,
    private readonly reader: StreamReader,
  ) {
    this.chunks = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    this.lines = new LineSplitter(MAX_LINE_CHARS, reader.sse === true);
  }

  /** The events of the next read that carries any (never empty); undefined after the final one. */
  async next(): Promise<RunnerEvent[] | undefined> {
    try {
      return await this.read();
    } catch (err) {
      if (err instanceof LineTooLongError) throw new EngineError("upstream_down", `the upstream's answer is not an event stream: ${err.message}`);
      throw err;
    }
  }

  private async read(): Promise<RunnerEvent[] | undefined> {
    if (this.failure) throw this.failure.err;
    const out: RunnerEvent[] = [];
    try {
      while (out.length === 0 && !this.reader.finished) {
        const step = await this.chunks.next();
        if (step.done) {
          this.reader.read(this.lines.end(), out);
          if (!this.reader.finished) this.reader.end(out);
        } else {
          this.reader.read(this.lines.push(step.value), out);
        }
      }
    } catch (err) {
      // A read only ends early in the reader's parse: what it parsed before the error is
      // the client's (partial text, then the upstream's error).
      if (out.length === 0) throw err;
      this.failure = { err };
    }
    return out.length > 0 ? out : undefined;
  }

  /**
   * Ends the exchange. After the final event the rest of the body (the chunked encoding's end)
   * is read so undici keeps the connection for the next request; before it, the connection is
   * closed, which vLLM, llama-server and Ollama take as a cancel.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.reader.finished) {
      this.body.destroy();
      return;
    }
    void (async () => {
      let bytes = 0;
      for (;;) {
        const step = await this.chunks.next();
        if (step.done) return;
        if ((bytes += step.value.length) > TAIL_LIMIT) return void this.body.destroy();
      }
    })().catch(() => undefined);
  }
}
