// Network failures that another try will not mend, worded as what to do. A registry that was never
// reached (nothing listening, a host name that does not resolve, no route) fails the first request
// at once instead of after a minute of silent retries; once it has answered, the same errors are
// treated as transient (a registry restarting). A TLS failure is final always: an http registry
// asked for https, or a certificate this machine does not trust.

/** The error's code, looked for along `cause` and in an AggregateError (happy eyeballs). */
function codesOf(err: unknown): string[] {
  const out: string[] = [];
  const walk = (e: unknown, depth: number) => {
    if (e === null || typeof e !== "object" || depth > 4) return;
    const x = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof x.code === "string") out.push(x.code);
    if (Array.isArray(x.errors)) for (const inner of x.errors) walk(inner, depth + 1);
    walk(x.cause, depth + 1);
  };
  walk(err, 0);
  return out;
}

const NOT_LISTENING = new Set(["ECONNREFUSED"]);
const NO_NAME = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL"]);
const NO_ROUTE = new Set(["EHOSTUNREACH", "ENETUNREACH", "ENETDOWN"]);
/** OpenSSL's answer when the other side does not speak TLS (an http server). */
const NOT_TLS = new Set(["ERR_SSL_WRONG_VERSION_NUMBER", "ERR_SSL_PACKET_LENGTH_TOO_LONG", "ERR_SSL_HTTP_REQUEST", "ERR_SSL_RECORD_LAYER_FAILURE"]);
const UNTRUSTED = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

const UNTRUSTED_WHY: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: "it is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "its chain ends in a self-signed certificate",
  CERT_HAS_EXPIRED: "it has expired",
  CERT_NOT_YET_VALID: "it is not valid yet",
  ERR_TLS_CERT_ALTNAME_INVALID: "it was issued for another host name",
};

/**
 * The sentence for a failure that will not go away, or undefined when another try may help.
 * `firstContact`: nothing has been received from this registry yet.
 */
export function unreachableMessage(err: unknown, host: string, firstContact: boolean): string | undefined {
  const codes = codesOf(err);
  const has = (set: Set<string>) => codes.find((c) => set.has(c));
  if (has(NOT_TLS)) return `the registry at ${host} answered in plain http, not https; use --insecure for an http registry`;
  const untrusted = has(UNTRUSTED);
  if (untrusted) {
    const why = UNTRUSTED_WHY[untrusted] ?? "no trusted authority issued it";
    return `the registry at ${host} has a certificate this machine does not trust (${why}); give the daemon its CA certificate (NODE_EXTRA_CA_CERTS=<file> in its environment), or use --insecure for an http registry`;
  }
  if (!firstContact) return undefined;
  if (has(NOT_LISTENING)) return `cannot reach the registry at ${host}: connection refused; check that the registry is running and that the model name has its right host and port`;
  const noName = has(NO_NAME);
  if (noName) return `cannot reach the registry at ${host}: the host name does not resolve (${noName}); check the name and this machine's network or DNS`;
  const noRoute = has(NO_ROUTE);
  if (noRoute) return `cannot reach the registry at ${host}: no route to it (${noRoute}); check this machine's network connection`;
  return undefined;
}

/** The progress line for a request tried again: what failed and when the next try is. */
export function retryStatus(r: { error: string; attempt: number; tries: number; waitMs: number }): string {
  const error = r.error.length > 120 ? `${r.error.slice(0, 120)}…` : r.error;
  const wait = r.waitMs < 1000 ? `${Math.round(r.waitMs)}ms` : `${(r.waitMs / 1000).toFixed(1)}s`;
  return `${error}; retrying in ${wait} (try ${r.attempt} of ${r.tries})`;
}
