// The connection opened ahead for the next request to an upstream that hangs up after every
// answer (llama-server does after each streamed one): it is taken by the next request, never
// when the server has closed it or it is too old, and closing the connector closes it.
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Agent, request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { WarmConnector } from "../../src/backends/remote/warm-connector.js";

interface Upstream {
  url: string;
  /** When each connection was accepted (performance.now()). */
  accepted: number[];
  /** The accepted connection each request came on (index into `accepted`). */
  servedOn: number[];
  sockets: Socket[];
  close: () => Promise<void>;
}

/** Answers every request with "ok" and `Connection: close`; closes idle connections after `idleMs`. */
async function hangingUpServer(idleMs = 60_000): Promise<Upstream> {
  const accepted: number[] = [];
  const servedOn: number[] = [];
  const sockets: Socket[] = [];
  const server = http.createServer((req, res) => {
    servedOn.push(sockets.indexOf(req.socket));
    res.writeHead(200, { connection: "close", "content-type": "text/plain" });
    res.end("ok");
  });
  server.keepAliveTimeout = idleMs;
  server.headersTimeout = idleMs + 1000;
  server.requestTimeout = 0;
  server.on("connection", (s: Socket) => {
    accepted.push(performance.now());
    sockets.push(s);
    // a connection that sends no request is closed after idleMs, as llama-server does after 5 s
    const t = setTimeout(() => s.destroy(), idleMs);
    s.once("data", () => clearTimeout(t));
    s.once("close", () => clearTimeout(t));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    accepted,
    servedOn,
    sockets,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function get(agent: Agent, url: string): Promise<string> {
  const res = await request(url, { dispatcher: agent });
  return res.body.text();
}

describe("WarmConnector", () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c();
  });

  function setup(up: Upstream, maxAgeMs?: number) {
    const warm = new WarmConnector(undefined, maxAgeMs);
    const agent = new Agent({ connect: warm.connect });
    warm.attach(agent);
    cleanup.push(async () => {
      warm.close();
      await agent.close();
      await up.close();
    });
    return { warm, agent };
  }

  it("the next request goes out on a connection opened before it was sent", async () => {
    const up = await hangingUpServer();
    const { warm, agent } = setup(up);
    expect(await get(agent, up.url)).toBe("ok");
    await sleep(50); // the server hung up; the connection opened ahead is waiting
    expect(warm.waitingCount).toBe(1);
    const sent = performance.now();
    expect(await get(agent, up.url)).toBe("ok");
    expect(up.servedOn).toEqual([0, 1]);
    expect(up.accepted[1]).toBeLessThan(sent); // connected ahead, not on demand
    // and the next one waits once the server has hung up on that request
    await sleep(50);
    expect(warm.waitingCount).toBe(1);
    expect(up.accepted).toHaveLength(3);
  });

  it("never sends a request on a connection the server has closed meanwhile", async () => {
    const up = await hangingUpServer(30); // closes idle connections after 30 ms
    const { warm, agent } = setup(up);
    expect(await get(agent, up.url)).toBe("ok");
    await sleep(150); // the one opened ahead was closed by the server
    expect(warm.waitingCount).toBe(0);
    for (let i = 0; i < 3; i++) {
      expect(await get(agent, up.url)).toBe("ok");
      await sleep(60);
    }
    expect(up.servedOn).toHaveLength(4);
  });

  it("drops a connection that has waited longer than its age limit, and closes what waits on close()", async () => {
    const up = await hangingUpServer();
    const { warm, agent } = setup(up, 40);
    await get(agent, up.url);
    await sleep(10);
    expect(warm.waitingCount).toBe(1);
    await sleep(100);
    expect(warm.waitingCount).toBe(0);
    expect(up.sockets[1]?.destroyed || up.sockets[1]?.readableEnded).toBe(true);
    await get(agent, up.url);
    await sleep(10);
    expect(warm.waitingCount).toBe(1);
    const waiting = up.sockets.at(-1)!;
    warm.close();
    expect(warm.waitingCount).toBe(0);
    await sleep(30);
    expect(waiting.destroyed || waiting.readableEnded).toBe(true);
  });

  it("opens nothing ahead for an upstream that cannot be reached; the request reports the failure", async () => {
    const up = await hangingUpServer();
    const { warm, agent } = setup(up);
    await up.close();
    await expect(get(agent, up.url)).rejects.toThrow(/ECONNREFUSED/);
    await sleep(30);
    expect(warm.waitingCount).toBe(0);
  });
});
