// The bench's one NDJSON client: a streamed POST over node:http (the least client overhead),
// every line timestamped on arrival with the monotonic clock every measurement uses.
import http from "node:http";

/** Monotonic milliseconds. */
export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface Generation {
  /** Request written. */
  tSent: number;
  /** First line with a non-empty `response` (the final line's time when there is none). */
  tFirst: number;
  /** The final (`done`) line's arrival. */
  tDone: number;
  tEnd: number;
  /** Arrival of every line with text, in order. */
  chunkTimes: number[];
  final: Record<string, unknown>;
  text: string;
}

/**
 * Calls onLine(line, arrival time) for every non-empty NDJSON line of a response (a chunk's lines
 * share the chunk's arrival time), and onEnd(time) after the last one.
 */
export function readNdjsonLines(res: http.IncomingMessage, onLine: (line: string, t: number) => void, onEnd: (t: number) => void): void {
  let buf = "";
  const emit = (line: string, t: number) => {
    if (line.trim()) onLine(line, t);
  };
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    const t = nowMs();
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      emit(buf.slice(0, nl), t);
      buf = buf.slice(nl + 1);
    }
  });
  res.on("end", () => {
    const t = nowMs();
    emit(buf, t);
    onEnd(t);
  });
}

/** Streams one /api/generate; throws on an HTTP error, an `error` line or a missing final chunk. */
export function generate(agent: http.Agent, base: string, body: Record<string, unknown>): Promise<Generation> {
  const url = new URL("/api/generate", base);
  const data = Buffer.from(JSON.stringify({ stream: true, ...body }));
  return new Promise((resolve, reject) => {
    let tSent = 0;
    let tDone = NaN;
    let text = "";
    const chunkTimes: number[] = [];
    let final: Record<string, unknown> | undefined;
    let error: string | undefined;
    const onLine = (line: string, t: number) => {
      const obj = JSON.parse(line) as Record<string, unknown>;
      if (typeof obj.error === "string") error = obj.error;
      if (typeof obj.response === "string" && obj.response !== "") {
        chunkTimes.push(t);
        text += obj.response;
      }
      if (obj.done) {
        final = obj;
        tDone = t;
      }
    };
    const req = http.request(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { "Content-Type": "application/json", "Content-Length": data.length } },
      (res) => {
        readNdjsonLines(res, onLine, (tEnd) => {
          if (res.statusCode !== 200 || error) reject(new Error(`/api/generate: HTTP ${res.statusCode} ${error ?? ""}`));
          else if (!final) reject(new Error("/api/generate: stream ended without a final chunk"));
          else resolve({ tSent, tFirst: chunkTimes[0] ?? tEnd, tDone, tEnd, chunkTimes, final, text });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    tSent = nowMs();
    req.end(data);
  });
}
