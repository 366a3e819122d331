// Registry failures that will not go away fail at once, in a sentence that says what to do: nothing
// listening, a host name that does not resolve, an http registry asked for https, a certificate
// this machine does not trust. Failures that may pass are retried, and each retry is shown as a
// progress line as it happens. The daemon runs with its real back-off (1 s, doubling), so a
// retried "registry down" would take about 30 s: the bound below catches that, nothing finer.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { unreachableMessage, retryStatus } from "../../src/registry/unreachable.js";
import { CLI, createModelFromFile, freePort, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { haveOpenssl, ndjson, postJson, registryEnv, startFaultProxy, startRegistry, type FaultProxy, type TestRegistry } from "../helpers/registry.js";

const exec = promisify(execFile);
const run = describe;

let home: string;
let daemon: TestDaemon;
let reg: TestRegistry;
let tls: TestRegistry | undefined;
let proxy: FaultProxy;

/** A pull through the daemon: the last progress line or the error, and how long it took. */
async function pull(model: string, insecure: boolean): Promise<{ lines: Array<Record<string, unknown>>; ms: number }> {
  const t = Date.now();
  const r = await postJson(`${daemon.url}/api/pull`, { model, insecure });
  const lines = r.status === 200 ? await ndjson(r) : [(await r.json()) as Record<string, unknown>];
  return { lines, ms: Date.now() - t };
}

const errorOf = (lines: Array<Record<string, unknown>>) => String(lines.at(-1)?.error ?? "");

run("registry failures that will not go away", () => {
  beforeAll(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), "ollamats-unreachable-"));
    const env = registryEnv(home);
    delete (env as Record<string, string | undefined>).OLLAMATS_TRANSFER_BACKOFF_MS; // the real back-off
    daemon = await startDaemon(env);
    reg = await startRegistry();
    proxy = await startFaultProxy(reg.url);
    if (haveOpenssl()) tls = await startRegistry({ tls: true });
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await proxy?.stop();
    await reg?.stop();
    await tls?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("nothing listening: fails at once, says to check the registry and the host and port", async () => {
    const port = await freePort();
    const { lines, ms } = await pull(`127.0.0.1:${port}/test/m:latest`, true);
    expect(errorOf(lines)).toBe(
      `pull model manifest: cannot reach the registry at 127.0.0.1:${port}: connection refused; check that the registry is running and that the model name has its right host and port`,
    );
    expect(ms).toBeLessThan(10_000);
    // and from the CLI: one line, exit code 1
    const r = await exec(process.execPath, [CLI, "pull", "--insecure", `127.0.0.1:${port}/test/m`], { env: daemon.env }).catch((e: { stderr: string; code: number }) => e);
    expect((r as { code: number }).code).toBe(1);
    // (off a terminal the progress prints each status once, then the error)
    expect((r as { stderr: string }).stderr).toMatch(/^pulling manifest\nError: pull model manifest: cannot reach the registry at 127\.0\.0\.1:\d+: connection refused; check that the registry is running[^\n]*\n$/);
  });

  it("a host name that does not resolve: fails at once", async () => {
    const { lines, ms } = await pull("registry.ollamats-test.invalid/test/m:latest", false);
    expect(errorOf(lines)).toMatch(/^pull model manifest: cannot reach the registry at registry\.ollamats-test\.invalid: the host name does not resolve \((ENOTFOUND|EAI_AGAIN)\); check the name and this machine's network or DNS$/);
    expect(ms).toBeLessThan(10_000);
  });

  it("an http registry without --insecure: says to use --insecure, no OpenSSL text", async () => {
    const { lines, ms } = await pull(`${reg.host}/test/m:latest`, false);
    expect(errorOf(lines)).toBe(`pull model manifest: the registry at ${reg.host} answered in plain http, not https; use --insecure for an http registry`);
    expect(errorOf(lines)).not.toMatch(/SSL|ssl3|openssl/i);
    expect(ms).toBeLessThan(10_000);
  });

  it("an https registry with a certificate nobody here trusts: says how to trust it", async () => {
    if (!tls) return; // no openssl to make one
    const { lines } = await pull(`${tls.host}/test/m:latest`, false);
    expect(errorOf(lines)).toBe(
      `pull model manifest: the registry at ${tls.host} has a certificate this machine does not trust (it is self-signed); give the daemon its CA certificate (NODE_EXTRA_CA_CERTS=<file> in its environment), or use --insecure for an http registry`,
    );
  });

  it("failures that may pass are retried, each retry shown as it happens", async () => {
    const model = `${proxy.host}/test/retried:latest`;
    const file = await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 });
    expect((await createModelFromFile(daemon.url, model, file)).status).toBe(200);
    expect((await postJson(`${daemon.url}/api/push`, { model, insecure: true, stream: false })).status).toBe(200);
    expect((await postJson(`${daemon.url}/api/delete`, { model }, "DELETE")).status).toBe(200);
    proxy.faults = { manifest500: 2 };
    const { lines } = await pull(model, true);
    proxy.faults = {};
    const statuses = lines.map((l) => String(l.status ?? l.error));
    expect(statuses[0]).toBe("pulling manifest");
    expect(statuses[1]).toMatch(/^500: .*; retrying in [\d.]+m?s \(try 2 of 6\)$/);
    expect(statuses[2]).toMatch(/^500: .*; retrying in [\d.]+m?s \(try 3 of 6\)$/);
    expect(statuses.at(-1)).toBe("success");
  }, 60_000);
});

describe("which network failures are final", () => {
  const errno = (code: string) => Object.assign(new Error(code), { code });
  it("refused, unresolved and unroutable only before the registry ever answered; TLS always", () => {
    for (const code of ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]) {
      expect(unreachableMessage(errno(code), "h:1", true), code).toMatch(/^cannot reach the registry at h:1: /);
      expect(unreachableMessage(errno(code), "h:1", false), code).toBeUndefined();
    }
    // happy eyeballs: every address refused
    expect(unreachableMessage(new AggregateError([errno("ECONNREFUSED"), errno("ECONNREFUSED")]), "h:1", true)).toMatch(/connection refused/);
    expect(unreachableMessage(new TypeError("fetch failed", { cause: errno("ERR_SSL_WRONG_VERSION_NUMBER") }), "h:1", false)).toMatch(/use --insecure/);
    expect(unreachableMessage(errno("CERT_HAS_EXPIRED"), "h:1", false)).toMatch(/\(it has expired\)/);
    for (const code of ["ECONNRESET", "ETIMEDOUT", "UND_ERR_SOCKET"]) expect(unreachableMessage(errno(code), "h:1", true), code).toBeUndefined();
    expect(retryStatus({ error: "500: busy", attempt: 2, tries: 6, waitMs: 1500 })).toBe("500: busy; retrying in 1.5s (try 2 of 6)");
    expect(net.isIP("127.0.0.1")).toBe(4);
  });
});
