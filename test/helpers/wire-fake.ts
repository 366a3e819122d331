// An upstream whose every answer a test scripts byte for byte: the wire variety of real engines
// (SSE framing, chunk shapes, encodings, informational responses) and hostile ones. GET /health,
// /v1/models, /api/version and POST /api/show answer by default; everything else goes to
// `answer`, which writes the response itself. 127.0.0.1 only; every socket ends at stop().
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type WireAnswer = (req: http.IncomingMessage, res: http.ServerResponse, body: Record<string, unknown>) => void | Promise<void>;

export interface WireFake {
  url: string;
  /** What the next POST (other than /api/show) gets. */
  answer: WireAnswer;
  /** The /v1/models answer (a JSON value, written as is). */
  models: unknown;
  /** POST requests as received, newest last. */
  requests: Array<{ path: string; body: Record<string, unknown> }>;
  /** Connections opened so far. */
  connections: number;
  stop(): Promise<void>;
}

/** Writes `chunks` one write each, flushed apart (so each reaches the reader in its own read). */
export async function writeApart(res: http.ServerResponse, chunks: Array<string | Buffer>, gapMs = 2): Promise<void> {
  for (const c of chunks) {
    if (res.destroyed) return;
    res.write(c);
    await new Promise((r) => setTimeout(r, gapMs));
  }
  res.end();
}

export async function startWireFake(model: string): Promise<WireFake> {
  const sockets = new Set<Socket>();
  const state = {
    answer: ((_q, res) => void res.writeHead(500).end("no answer scripted")) as WireAnswer,
    models: { object: "list", data: [{ id: model, object: "model" }] } as unknown,
    requests: [] as WireFake["requests"],
    connections: 0,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= 1 << 20) chunks.push(c);
    });
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0] as string;
      if (req.method === "GET") {
        const known: Record<string, unknown> = { "/health": {}, "/v1/models": state.models, "/api/version": { version: "0.12.0" } };
        if (!(path in known)) return void res.writeHead(404).end("404 page not found");
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(JSON.stringify(known[path]));
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
      } catch {
        // kept empty: the test sees it in `requests`
      }
      if (path === "/api/show") {
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ template: "{{ .Prompt }}", capabilities: ["completion", "tools", "thinking", "embedding"], details: { family: "fake" } }));
      }
      state.requests.push({ path, body });
      void Promise.resolve(state.answer(req, res, body)).catch(() => res.destroy());
    });
  });
  server.on("connection", (s) => {
    state.connections++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
