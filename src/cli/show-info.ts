// `ollama show MODEL` default output (cmd.go showInfo): sections Model, Capabilities, Projector,
// Parameters, Metadata and Tensors (verbose only), System and License (first two lines + "...").

import type { ShowResponse } from "../api/types.js";
import { goFloatG, goValue, humanNumber } from "./format.js";
import { displayWidth, renderTable } from "./table.js";

/** Fields newer servers add to /api/show that the CLI prints when present. */
export type ShowInfo = ShowResponse & {
  projector_info?: Record<string, unknown>;
  requires?: string;
  remote_host?: string;
  remote_model?: string;
};

function section(header: string, rows: string[][]): string {
  const colWidth = header === "Template" || header === "System" || header === "License" ? 100 : 30;
  return `  ${header}\n${renderTable(rows, { colWidth })}\n`;
}

/** Go's strconv.FormatFloat(f, 'f', -1, 64). */
function plainNumber(f: number): string {
  if (Number.isInteger(f) && Math.abs(f) < 1e21) return f.toFixed(0);
  return String(f);
}

function head(s: string, n: number): string[][] {
  const rows: string[][] = [];
  let count = 0;
  for (const raw of s.split("\n")) {
    const text = raw.trim();
    if (text === "") continue;
    count++;
    if (n < 0 || count <= n) rows.push(["", text]);
  }
  if (n >= 0 && count > n) rows.push(["", "..."]);
  return rows;
}

/** Metadata cell for an array: as many items as fit in ~10 columns, then " ...+N more]". */
function arrayCell(items: unknown[]): string {
  const targetWidth = 10;
  let shown = 0;
  let total = 1;
  for (let i = 0; i < items.length; i++) {
    let width = displayWidth(goValue(items[i]));
    if (i > 0) width += 2;
    if (total + width > targetWidth && i > 0) break;
    total += width;
    shown++;
  }
  if (shown < items.length) {
    return `${goValue(items.slice(0, shown)).replace(/\]$/, "")} ...+${items.length - shown} more]`;
  }
  return goValue(items);
}

function metadataCell(v: unknown): string {
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "string") return v;
  if (typeof v === "number") return goFloatG(v);
  if (Array.isArray(v)) return arrayCell(v);
  if (v === null) return "<nil>";
  return "map[string]interface {}";
}

export function formatShowInfo(resp: ShowInfo, verbose: boolean): string {
  let out = "";
  const modelInfo = resp.model_info as Record<string, unknown> | undefined | null;
  const details = resp.details ?? { family: "", parameter_size: "", quantization_level: "" };

  const model: string[][] = [];
  if (resp.remote_host) {
    model.push(["", "Remote model", resp.remote_model ?? ""]);
    model.push(["", "Remote URL", resp.remote_host]);
  }
  if (modelInfo !== undefined && modelInfo !== null) {
    const arch = typeof modelInfo["general.architecture"] === "string" ? modelInfo["general.architecture"] : "";
    if (arch !== "") model.push(["", "architecture", arch]);
    let params = details.parameter_size ?? "";
    const count = modelInfo["general.parameter_count"];
    if (params === "" && typeof count === "number") params = humanNumber(count);
    if (params !== "") model.push(["", "parameters", params]);
    const ctx = modelInfo[`${arch}.context_length`];
    if (typeof ctx === "number") model.push(["", "context length", plainNumber(ctx)]);
    const emb = modelInfo[`${arch}.embedding_length`];
    if (typeof emb === "number") model.push(["", "embedding length", plainNumber(emb)]);
  } else {
    model.push(["", "architecture", details.family ?? ""]);
    model.push(["", "parameters", details.parameter_size ?? ""]);
  }
  model.push(["", "quantization", details.quantization_level ?? ""]);
  if (resp.requires) model.push(["", "requires", resp.requires]);
  out += section("Model", model);

  if (resp.capabilities && resp.capabilities.length > 0) {
    out += section("Capabilities", resp.capabilities.map((c) => ["", c]));
  }

  const proj = resp.projector_info;
  if (proj !== undefined && proj !== null) {
    const rows: string[][] = [];
    const arch = typeof proj["general.architecture"] === "string" ? proj["general.architecture"] : "";
    if (arch !== "") rows.push(["", "architecture", arch]);
    const count = proj["general.parameter_count"];
    if (typeof count === "number") rows.push(["", "parameters", humanNumber(count)]);
    const value = (suffix: string): number | undefined => {
      for (const modality of ["vision", "audio"]) {
        const v = proj[`${arch}.${modality}.${suffix}`];
        if (typeof v === "number") return v;
      }
      return undefined;
    };
    const emb = value("embedding_length");
    if (emb !== undefined) rows.push(["", "embedding length", plainNumber(emb)]);
    const dim = value("projection_dim");
    if (dim !== undefined) rows.push(["", "dimensions", plainNumber(dim)]);
    out += section("Projector", rows);
  }

  if (resp.parameters) {
    const rows = resp.parameters
      .split("\n")
      .map((line) => line.replace(/\r$/, ""))
      .filter((line) => line !== "")
      .map((line) => ["", ...line.split(/[\s]+/).filter((f) => f !== "")]);
    out += section("Parameters", rows);
  }

  if (modelInfo !== undefined && modelInfo !== null && verbose) {
    const keys = Object.keys(modelInfo).sort();
    out += section(
      "Metadata",
      keys.map((k) => ["", k, metadataCell(modelInfo[k])]),
    );
  }

  if (verbose && resp.tensors && resp.tensors.length > 0) {
    out += section(
      "Tensors",
      resp.tensors.map((t) => ["", t.name, t.type, `[${t.shape.join(" ")}]`]),
    );
  }

  if (resp.system) out += section("System", head(resp.system, 2));
  if (resp.license) out += section("License", head(resp.license, 2));
  return out;
}

/** `ollama show --license|--modelfile|--parameters|--system|--template`: exactly what ShowHandler prints. */
export function showField(field: "license" | "modelfile" | "parameters" | "system" | "template", resp: ShowResponse): string {
  switch (field) {
    case "license":
      return `${resp.license ?? ""}\n`; // fmt.Println
    case "modelfile":
      return `${resp.modelfile ?? ""}\n`;
    case "parameters":
      return `${resp.parameters ?? ""}\n`;
    case "system":
      return resp.system ?? ""; // fmt.Print
    case "template":
      return resp.template ?? "";
  }
}
