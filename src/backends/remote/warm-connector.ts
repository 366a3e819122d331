// A connection to each upstream opened before it is needed. llama-server closes its connection
// after every streamed answer (it says keep-alive, then hangs up), so each request to it would
// pay a TCP connect, and over the network a TLS handshake too, before its first token (on
// loopback here 1.0–1.8 ms from undici's connect to its connected event; 0.4–0.9 ms with a
// connection opened ahead). When an upstream hangs up (undici's `disconnect`, after an answer:
// off every first token's path), the next connection to it is opened and waits; the next
// connect gets it. Upstreams that keep connections alive (vLLM, Ollama) hang up only when idle,
// and get one that waits in vain. At most one waits per origin, and only for WARM_MAX_AGE_MS:
// servers close idle connections after a few seconds (llama-server and uvicorn after 5), and a
// request written to a connection the server is closing would fail.
import type { Socket } from "node:net";
import { buildConnector, type Agent } from "undici";

/** How long a connection opened ahead may wait for a request. */
export const WARM_MAX_AGE_MS = 2000;

interface Waiting {
  socket: Socket;
  timer: NodeJS.Timeout;
  /** Removes the listeners that watch it while it waits. */
  release: () => void;
}

type Connect = buildConnector.connector;
type ConnectOptions = buildConnector.Options;

export class WarmConnector {
  private readonly waiting = new Map<string, Waiting>();
  private readonly opening = new Set<string>();
  /** How each origin was last connected to, by its URL origin (what `disconnect` names). */
  private readonly seen = new Map<string, ConnectOptions>();
  private closed = false;

  constructor(
    private readonly open: Connect = buildConnector({}),
    private readonly maxAgeMs = WARM_MAX_AGE_MS,
  ) {}

  /** undici's `connect` option. */
  readonly connect: Connect = (opts, callback) => {
    this.seen.set(urlOrigin(opts), opts);
    const ready = this.take(originKey(opts));
    // undici expects the answer later, as a real connect gives it (it is inside its resume loop)
    if (ready) process.nextTick(() => callback(null, ready));
    else this.open(opts, callback);
  };

  /** Watches `agent` for upstreams hanging up, to open the next connection to them then. */
  attach(agent: Pick<Agent, "on">): void {
    agent.on("disconnect", (origin) => {
      const opts = this.seen.get(origin.origin);
      if (opts && !this.closed) this.prepare(opts);
    });
  }

  /** Connections opened ahead and not taken. */
  get waitingCount(): number {
    return this.waiting.size;
  }

  close(): void {
    this.closed = true;
    for (const key of [...this.waiting.keys()]) this.take(key)?.destroy();
  }

  /** The waiting connection to `key`, if it can still carry a request. */
  private take(key: string): Socket | undefined {
    const w = this.waiting.get(key);
    if (!w) return undefined;
    this.waiting.delete(key);
    clearTimeout(w.timer);
    w.release();
    // closed, half-closed or sent something unasked (a 408 before hanging up): not for a request
    if (w.socket.destroyed || w.socket.readableEnded || w.socket.readableLength > 0) {
      w.socket.destroy();
      return undefined;
    }
    return w.socket;
  }

  private prepare(opts: ConnectOptions): void {
    const key = originKey(opts);
    if (this.waiting.has(key) || this.opening.has(key)) return;
    this.opening.add(key);
    this.open(opts, (err, socket) => {
      this.opening.delete(key);
      if (err || !socket) return; // the request's own connect reports what is wrong
      if (this.closed || this.waiting.has(key)) return void socket.destroy();
      const drop = () => {
        if (this.waiting.get(key)?.socket === socket) this.take(key);
        socket.destroy();
      };
      socket.on("end", drop).on("close", drop).on("error", drop);
      const timer = setTimeout(drop, this.maxAgeMs);
      timer.unref();
      this.waiting.set(key, {
        socket,
        timer,
        release: () => socket.off("end", drop).off("close", drop).off("error", drop),
      });
    });
  }
}

/** undici connects with the parts of the URL whose `origin` its `disconnect` names. */
function urlOrigin(o: ConnectOptions): string {
  return `${o.protocol}//${o.host ?? `${o.hostname}${o.port ? `:${o.port}` : ""}`}`;
}

function originKey(o: ConnectOptions): string {
  return `${o.protocol}//${o.hostname}:${o.port}|${o.servername ?? ""}|${o.localAddress ?? ""}|${o.socketPath ?? ""}`;
}
