// The `parameters` field of /api/show: one line per value, key padded to 30 columns.

/** Go's %q for the values Ollama quotes. */
function goQuote(v: unknown): string {
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

function paramLines(params: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const k of Object.keys(params).sort()) {
    const v = params[k];
    for (const item of Array.isArray(v) ? v : [v]) out.push([k, goQuote(item)]);
  }
  return out;
}

export function showParameters(params: Record<string, unknown>): string {
  return paramLines(params)
    .map(([k, v]) => `${k.padEnd(30)} ${v}`)
    .join("\n");
}
