// One HTTP exchange with full control of what is sent (method, raw path, headers, body bytes),
// a deadline, and a bounded read of the answer. A fresh connection per request, so one case's
// broken request never poisons the next one's socket.
import http from "node:http";

export interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface Answer {
  /** null: no answer head arrived (connection error or deadline). */
  status: number | null;
  contentType: string;
  body: Buffer;
  /** The body was longer than the cap and was cut (the connection was closed). */
  truncated: boolean;
  ms: number;
  /** "head": no answer head before the deadline; "body": the head came, the body did not end. */
  deadline?: "head" | "body";
  /** Connection-level error text (reset, refused, ...). */
  error?: string;
}

export function send(baseUrl: string, req: Request, deadlineMs: number, maxBody = 4 << 20): Promise<Answer> {
  const url = new URL(baseUrl);
  const t0 = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let status: number | null = null;
    let contentType = "";
    const parts: Buffer[] = [];
    let size = 0;
    let truncated = false;
    const finish = (extra: Partial<Answer> = {}) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, contentType, body: Buffer.concat(parts), truncated, ms: Math.round(performance.now() - t0), ...extra });
    };
    let r: http.ClientRequest;
    try {
      r = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers: req.headers, agent: false });
    } catch (err) {
      // Node refuses to send it (an invalid header or path): nothing reached the daemon
      resolve({ status: null, contentType: "", body: Buffer.alloc(0), truncated: false, ms: 0, error: `not sent: ${(err as Error).message}` });
      return;
    }
    const timer = setTimeout(() => {
      finish({ deadline: status === null ? "head" : "body" });
      r.destroy();
    }, deadlineMs);
    r.on("response", (res) => {
      status = res.statusCode ?? null;
      contentType = String(res.headers["content-type"] ?? "");
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > maxBody) {
          truncated = true;
          finish();
          r.destroy();
          return;
        }
        parts.push(c);
      });
      res.on("end", () => finish());
      res.on("error", (e) => finish({ error: e.message }));
      res.on("close", () => finish());
    });
    r.on("error", (e) => finish({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    if (req.body && req.body.length) r.write(req.body);
    r.end();
  });
}
