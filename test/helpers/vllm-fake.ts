// A contract fake of vLLM's OpenAI-compatible server, written from vLLM's documented API
// (docs.vllm.ai "OpenAI-Compatible Server"): /health, /v1/models, /v1/chat/completions and
// /v1/completions (SSE chunks, `reasoning_content` deltas of a reasoning parser, streamed
// `tool_calls` deltas, usage in a last chunk with empty `choices` when
// `stream_options.include_usage`), /v1/embeddings, /tokenize and /detokenize at the root, errors
// as {"object":"error","message","type","param","code"}, `--api-key` as a bearer token. Its
// answers are scripted, so tests can check what ollamats sends (guided_json, response_format,
// chat_template_kwargs, sampling) and what it makes of each field. Fault modes make it hang, drop
// the connection mid-stream, stream slowly (to see a client's cancel arrive), or send the whole
// answer at once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { drainOrClose } from "./drain.js";

export interface FakeScript {
  reasoning?: string[];
  content?: string[];
  toolCall?: { name: string; arguments: string[] };
  finish?: "stop" | "length" | "tool_calls";
  usage?: { prompt_tokens: number; completion_tokens: number };
}

/** burst: the whole streamed answer in one write (so it reaches the front in one read).
 *  endless: a 200 whose body never ends (an SSE line or a JSON document that goes on);
 *  endless-error: a 500 whose body never ends. Both stop at ENDLESS_CAP bytes or when the client
 *  closes the connection, and count what they sent in `endlessSent`.
 *  hang-up: the connection closed under each request, unanswered (counted in `hungUp`);
 *  hang-up-once: that once, then normal (llama-server closing a kept-alive connection as a
 *  request goes out on it). */
export type FakeMode = "normal" | "hang" | "hang-up-once" | "hang-up" | "die-mid-stream" | "slow" | "burst" | "endless" | "endless-error";

/** What an endless answer sends at most: far past every limit of the daemon, still bounded. */
export const ENDLESS_CAP = 1024 * 1024 * 1024;

export interface VllmFake {
  url: string;
  port: number;
  /** Bodies of the POST requests, newest last. */
  requests: Array<{ path: string; body: Record<string, unknown>; authorization?: string }>;
  script: FakeScript;
  mode: FakeMode;
  /** Requests whose connection the client closed before the answer ended. */
  closedEarly: number;
  /** Requests whose connection the fake closed without answering (hang-up modes). */
  hungUp: number;
  /** Bytes the last endless answer sent before the client closed the connection (or the cap). */
  endlessSent: number;
  stop(): Promise<void>;
}

function error(res: http.ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ object: "error", message, type, param: null, code: status }));
}

export async function startVllmFake(opts: { model: string; apiKey?: string; port?: number }): Promise<VllmFake> {
  const state: Omit<VllmFake, "url" | "port" | "stop"> = {
    requests: [],
    script: { content: ["Hello", " from", " vLLM"], finish: "stop", usage: { prompt_tokens: 7, completion_tokens: 3 } },
    mode: "normal",
    closedEarly: 0,
    hungUp: 0,
    endlessSent: 0,
  };
  /** Writes `head`, then one byte after another without end (with back-pressure), until the
   *  client goes away or ENDLESS_CAP. */
  async function endless(res: http.ServerResponse, status: number, contentType: string, head: string): Promise<void> {
    res.writeHead(status, { "content-type": contentType });
    state.endlessSent = 0;
    const block = Buffer.alloc(1024 * 1024, "a");
    let sent = Buffer.byteLength(head);
    res.write(head);
    while (!res.destroyed && sent < ENDLESS_CAP) {
      sent += block.length;
      state.endlessSent = sent;
      if (!res.write(block)) await drainOrClose(res);
    }
    res.destroy();
  }
  const sockets = new Set<import("node:net").Socket>();
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => void handle(raw));

    async function handle(text: string): Promise<void> {
      const path = (req.url ?? "").split("?")[0] as string;
      if (opts.apiKey && path !== "/health" && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "Unauthorized" }));
        return;
      }
      if (req.method === "GET" && path === "/health") return void res.writeHead(200).end();
      if (req.method === "GET" && path === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: opts.model, object: "model", created: 0, owned_by: "vllm", root: opts.model, max_model_len: 4096 }] }));
        return;
      }
      if (req.method !== "POST") return error(res, 404, "NotFoundError", "Not Found");
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return error(res, 400, "BadRequestError", "invalid JSON");
      }
      state.requests.push({ path, body, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
      if (path !== "/tokenize" && path !== "/detokenize" && body.model !== opts.model) {
        return error(res, 404, "NotFoundError", `The model \`${String(body.model)}\` does not exist.`);
      }
      if (state.mode === "hang") return; // never answers
      if (state.mode === "hang-up" || state.mode === "hang-up-once") {
        if (state.mode === "hang-up-once") state.mode = "normal";
        state.hungUp++;
        return void req.socket.destroy();
      }
      if (state.mode === "endless-error") return endless(res, 500, "application/json", '{"object":"error","message":"');
      if (state.mode === "endless") {
        const streamed = path.endsWith("completions") && body.stream === true;
        return streamed ? endless(res, 200, "text/event-stream", 'data: {"choices":[{"delta":{"content":"') : endless(res, 200, "application/json", '{"tokens":[1,2,3],"x":"');
      }
      switch (path) {
        case "/tokenize": {
          const prompt = String(body.prompt ?? "");
          const tokens = [...prompt].map((ch) => ch.charCodeAt(0));
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end(JSON.stringify({ count: tokens.length, max_model_len: 4096, tokens }));
        }
        case "/detokenize": {
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end(JSON.stringify({ prompt: String.fromCharCode(...((body.tokens as number[]) ?? [])) }));
        }
        case "/v1/embeddings": {
          const input = Array.isArray(body.input) ? body.input : [body.input];
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end(
            JSON.stringify({
              object: "list",
              model: opts.model,
              data: input.map((s, index) => ({ object: "embedding", index, embedding: [String(s).length, 1, 2, 2] })),
              usage: { prompt_tokens: input.length * 2, total_tokens: input.length * 2 },
            }),
          );
        }
        case "/v1/chat/completions":
        case "/v1/completions":
          return stream(path === "/v1/chat/completions", body);
        default:
          return error(res, 404, "NotFoundError", "Not Found");
      }
    }

    async function stream(chat: boolean, body: Record<string, unknown>): Promise<void> {
      const s = state.script;
      const id = "chatcmpl-fake";
      const chunk = (choice: Record<string, unknown>) =>
        `data: ${JSON.stringify({ id, object: chat ? "chat.completion.chunk" : "text_completion", created: 1, model: opts.model, choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }] })}\n\n`;
      const piece = (content: Record<string, unknown>) => (chat ? chunk({ delta: content }) : chunk({ text: content.content ?? "" }));
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      let finished = false;
      res.on("close", () => {
        if (!finished) state.closedEarly++;
      });
      const events: string[] = [];
      if (chat) events.push(chunk({ delta: { role: "assistant", content: "" } }));
      for (const r of s.reasoning ?? []) events.push(piece({ reasoning_content: r }));
      for (const c of s.content ?? []) events.push(piece({ content: c }));
      if (s.toolCall) {
        events.push(chunk({ delta: { tool_calls: [{ index: 0, id: "chatcmpl-tool-1", type: "function", function: { name: s.toolCall.name, arguments: "" } }] } }));
        for (const a of s.toolCall.arguments) events.push(chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: a } }] } }));
      }
      events.push(chat ? chunk({ delta: {}, finish_reason: s.finish ?? "stop" }) : chunk({ text: "", finish_reason: s.finish ?? "stop" }));
      const so = body.stream_options as { include_usage?: boolean } | undefined;
      if (so?.include_usage && s.usage) {
        events.push(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model: opts.model, choices: [], usage: { ...s.usage, total_tokens: s.usage.prompt_tokens + s.usage.completion_tokens } })}\n\n`);
      }
      events.push("data: [DONE]\n\n");
      if (state.mode === "burst") {
        finished = true;
        return void res.end(events.join(""));
      }
      for (let i = 0; i < events.length; i++) {
        if (res.destroyed) return;
        if (state.mode === "die-mid-stream" && i === 3) {
          await new Promise((r) => setTimeout(r, 100)); // what was written reaches the client first
          res.socket?.destroy(); // the engine dies: the connection drops mid-answer
          return;
        }
        res.write(events[i]);
        if (state.mode === "slow") await new Promise((r) => setTimeout(r, 300));
      }
      finished = true;
      res.end();
    }
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    port,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  }) as VllmFake;
}
