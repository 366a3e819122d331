// The `details` object of /api/tags, /api/ps and /api/show, from the config blob and GGUF facts.
import type { ModelDetails } from "../../api/types.js";
import { ggufSource, type ModelSpec } from "../../registry/model-spec.js";

/** A remote model has only what its config blob says (no weights here to read facts from). */
export function detailsOf(spec: Pick<ModelSpec, "config" | "source">): ModelDetails {
  const c = spec.config;
  const facts = ggufSource(spec)?.facts ?? { family: "", parameterSize: "", quantizationLevel: "" };
  const family = c.model_family || facts.family;
  return {
    parent_model: "",
    format: c.model_format || "gguf",
    family,
    families: c.model_families && c.model_families.length > 0 ? c.model_families : family ? [family] : null,
    parameter_size: c.model_type || facts.parameterSize,
    quantization_level: c.file_type || facts.quantizationLevel,
  };
}

/** RFC 3339 with the server's local offset, as Ollama prints modified_at / expires_at. */
export function localTime(d: Date): string {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? "+" : "-";
  const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, "0");
  const local = new Date(d.getTime() + off * 60000);
  const iso = local.toISOString().replace("Z", "");
  return `${iso}${sign}${pad(Math.trunc(off / 60))}:${pad(off % 60)}`;
}

/** What Ollama shows of a remote model: its name upstream and the upstream (never a key). */
export function remoteFields(spec: Pick<ModelSpec, "source">): { remote_model?: string; remote_host?: string } {
  return spec.source.kind === "remote" ? { remote_model: spec.source.model, remote_host: spec.source.host } : {};
}
