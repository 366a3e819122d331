// The `list` and `ps` tables (cmd.go ListHandler / ListRunningHandler), as pure functions.

import type { ListModel, ProcessModel } from "../api/types.js";
import { humanBytes, humanTime } from "./format.js";
import { renderTable } from "./table.js";

/** `ollama list [PREFIX]`: NAME ID SIZE MODIFIED, prefix matched case-insensitively. */
export function formatListTable(models: ListModel[], prefix?: string, now: number = Date.now()): string {
  const rows: string[][] = [];
  for (const m of models) {
    if (prefix !== undefined && !m.name.toLowerCase().startsWith(prefix.toLowerCase())) continue;
    const remote = (m as ListModel & { remote_model?: string }).remote_model;
    const size = remote ? "-" : humanBytes(m.size);
    rows.push([m.name, (m.digest ?? "").slice(0, 12), size, humanTime(m.modified_at, "Never", now)]);
  }
  return renderTable(rows, { header: ["NAME", "ID", "SIZE", "MODIFIED"] });
}

/** PROCESSOR column: "100% GPU", "100% CPU", "48%/52% CPU/GPU" or "Unknown". */
export function processorLabel(size: number, sizeVram: number): string {
  if (sizeVram === 0) return "100% CPU";
  if (sizeVram === size) return "100% GPU";
  if (sizeVram > size || size === 0) return "Unknown";
  const cpuPercent = Math.round(((size - sizeVram) / size) * 100);
  return `${cpuPercent}%/${100 - cpuPercent}% CPU/GPU`;
}

/** `ollama ps [PREFIX]`: NAME ID SIZE PROCESSOR CONTEXT UNTIL, prefix matched case-sensitively. */
export function formatPsTable(models: ProcessModel[], prefix?: string, now: number = Date.now()): string {
  const rows: string[][] = [];
  for (const m of models) {
    if (prefix !== undefined && !m.name.startsWith(prefix)) continue;
    const expires = Date.parse(m.expires_at);
    const until = !Number.isNaN(expires) && now - expires > 0 ? "Stopping..." : humanTime(m.expires_at, "Never", now);
    rows.push([
      m.name,
      (m.digest ?? "").slice(0, 12),
      humanBytes(m.size),
      processorLabel(m.size, m.size_vram),
      String(m.context_length ?? 0),
      until,
    ]);
  }
  return renderTable(rows, { header: ["NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"] });
}
