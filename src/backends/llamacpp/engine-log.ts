// llama.cpp says why a load failed only in its log ("error loading model vocabulary: invalid gguf
// type for tokenizer.ggml.tokens"); node-llama-cpp then throws a bare "Failed to load model" or
// "Failed to create context". The runner keeps the engine's recent error lines (and still prints
// them, as node-llama-cpp's own logger does) so that a failed load or context says why.
import { Llama, LlamaLogLevel } from "node-llama-cpp";

const KEEP = 16;
// node-llama-cpp's messages that say only that something failed
const BARE = /^Failed to (load model|create context)$/;

export class EngineLog {
  private readonly lines: string[] = [];
  private count = 0;

  readonly logger = (level: LlamaLogLevel, message: string): void => {
    if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) {
      for (const line of message.split("\n")) {
        if (line.trim() === "") continue;
        this.lines.push(line.trim().slice(0, 500));
        this.count++;
      }
      this.lines.splice(0, Math.max(0, this.lines.length - KEEP));
    }
    Llama.defaultConsoleLogger(level, message);
  };

  /** Where the log stands now: errors after it belong to what starts next. */
  mark(): number {
    return this.count;
  }

  /** `err` as it was, or, when node-llama-cpp said only that it failed, the first error the
   *  engine logged since `mark` without its function name ("llama_model_load: "). The log comes
   *  from the loading thread through its own queue, and may arrive after the failure: it is
   *  waited for, briefly. */
  async explain(err: unknown, mark: number): Promise<unknown> {
    if (!(err instanceof Error) || !BARE.test(err.message)) return err;
    for (let i = 0; i < 20 && this.count === mark; i++) await new Promise((r) => setTimeout(r, 10));
    // the line after the reason ("failed to load model") may trail it
    await new Promise((r) => setImmediate(r));
    const since = this.lines.slice(Math.max(0, this.lines.length - (this.count - mark)));
    const first = since[0]?.replace(/^[A-Za-z_][\w:]*: /, "");
    return first ? new Error(first) : err;
  }
}
