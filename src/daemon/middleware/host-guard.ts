// DNS-rebinding guard: on a loopback listener, a request whose Host names some other machine
// (a web page that re-pointed its DNS at 127.0.0.1) is refused with an empty 403, as Ollama does.
import net from "node:net";
import os from "node:os";
import type { MiddlewareHandler } from "hono";

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host.startsWith("127.");
}

function isPrivateIp(ip: string): boolean {
  if (net.isIPv4(ip)) {
    const [a, b] = ip.split(".").map(Number) as [number, number];
    return a === 10 || a === 127 || a === 0 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
  }
  const v = ip.toLowerCase();
  return v === "::1" || v === "::" || v.startsWith("fc") || v.startsWith("fd") || v.startsWith("fe80");
}

function localAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.add(a.address);
  return out;
}

export function hostAllowed(hostHeader: string | undefined): boolean {
  if (!hostHeader) return true;
  let host = hostHeader.toLowerCase();
  if (host.startsWith("[")) host = host.slice(1, host.indexOf("]"));
  else if (host.split(":").length === 2) host = host.split(":")[0] as string;
  // An address first: it is what API clients send, and it needs no call into the OS (the host
  // name is a syscall per request).
  if (net.isIP(host)) return isPrivateIp(host) || localAddresses().has(host);
  if (host === "" || host === "localhost" || host === os.hostname().toLowerCase()) return true;
  return /\.(localhost|local|internal)$/.test(host);
}

export function hostGuard(listenHost: string): MiddlewareHandler {
  const active = isLoopback(listenHost);
  return async (c, next) => {
    if (active && !hostAllowed(c.req.header("host"))) return c.body(null, 403);
    await next();
  };
}
