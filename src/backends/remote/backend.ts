// The remote backend: a model whose spec names upstream engines (Ollama's remote stub:
// `remote_host`, `remote_model`) is served by them, over Ollama's /api or OpenAI's /v1. Only
// hosts in OLLAMA_REMOTES may be used (Ollama's rule and message). A remote model holds no
// memory here: it never evicts a local model, and it is "loaded" once its replicas are known.
import type { Config } from "../../config.js";
import type { ModelSpec, RemoteSource } from "../../registry/model-spec.js";
import { parseRemoteHosts, RemoteHostError, type UpstreamAddress } from "../../registry/remote-host.js";
import type { Backend, CompiledFormat, Placement, Runner, RunnerFeatures, StructuredOutput } from "../backend.js";
import { EngineError } from "../errors.js";
import type { Dialect } from "./dialect.js";
import { UpstreamHttp } from "./http.js";
import { OllamaDialect } from "./ollama-dialect.js";
import { OpenAIDialect } from "./openai-dialect.js";
import { ReplicaPool, type Replica } from "./pool.js";
import { REMOTE_FEATURES, RemoteRunner, type UpstreamListener } from "./runner.js";

/** Ollama's refusal of a remote host outside OLLAMA_REMOTES. */
export const REMOTE_NOT_ALLOWED = "this server cannot run this remote model";

interface RemotePlacement extends Placement {
  upstreams: UpstreamAddress[];
}

export class RemoteBackend implements Backend<RemotePlacement, UpstreamAddress[]> {
  readonly name = "remote";

  /** OLLAMA_REMOTES, lower-cased. */
  private readonly allowed: ReadonlySet<string>;
  /** remote_host values parsed (each request admits its model): one entry per value seen. */
  private readonly parsed = new Map<string, UpstreamAddress[] | { refused: string }>();

  /** onUpstream: told of each request to an upstream (its answer or failure, and how long). */
  constructor(
    private readonly config: Config,
    private readonly onUpstream?: UpstreamListener,
  ) {
    this.allowed = new Set(config.remotes.map((h) => h.toLowerCase()));
  }

  handles(spec: ModelSpec): boolean {
    return spec.source.kind === "remote";
  }

  private source(spec: ModelSpec): RemoteSource {
    if (spec.source.kind !== "remote") throw new Error(`${spec.shortName} is not a remote model`);
    return spec.source;
  }

  modelKey(spec: ModelSpec): string {
    const s = this.source(spec);
    return `remote:${s.host}\0${s.model}`;
  }

  private upstreams(spec: ModelSpec): UpstreamAddress[] {
    const host = this.source(spec).host;
    let found = this.parsed.get(host);
    if (!found) {
      try {
        found = parseRemoteHosts(host);
      } catch (err) {
        if (!(err instanceof RemoteHostError)) throw err;
        found = { refused: `${REMOTE_NOT_ALLOWED}: ${err.message}` };
      }
      if (this.parsed.size >= 1024) this.parsed.clear(); // bounded: names come from the store
      this.parsed.set(host, found);
    }
    if (!Array.isArray(found)) throw new EngineError("remote_not_allowed", found.refused);
    return found;
  }

  /** Every replica's host must be allowed (OLLAMA_REMOTES compares host names, as Ollama does). */
  admit(spec: ModelSpec): void {
    for (const u of this.upstreams(spec)) {
      if (!this.allowed.has(u.hostname.toLowerCase())) throw new EngineError("remote_not_allowed", REMOTE_NOT_ALLOWED);
    }
  }

  features(): RunnerFeatures {
    return REMOTE_FEATURES;
  }

  /** Upstreams take the JSON Schema itself (Ollama's `format`, OpenAI's response_format). */
  compileFormat(format: StructuredOutput): CompiledFormat {
    // An upstream is sent the schema as its own structured-output field: it has no way to be told
    // a text to start with (tool_choice's tag), so that is the upstream's to decide.
    if (format.kind === "markup") throw new EngineError("unsupported", "an upstream engine takes a JSON Schema, not a tool call's markup");
    if (format.kind === "schema" && format.prefix !== undefined) throw new EngineError("unsupported", "an upstream engine cannot be made to start its answer with a given text");
    return { backend: this.name, value: format };
  }

  want(spec: ModelSpec): UpstreamAddress[] {
    return this.upstreams(spec);
  }

  async plan(_spec: ModelSpec, upstreams: UpstreamAddress[]): Promise<RemotePlacement> {
    return { fits: true, local: false, sharesCpu: false, upstreams, describe: { upstreams: upstreams.map((u) => `${u.api}:${u.base}`).join(",") } };
  }

  /** Nothing of a request changes how an upstream was set up. */
  needsReload(): boolean {
    return false;
  }

  async load(spec: ModelSpec, p: RemotePlacement): Promise<Runner> {
    const { keys, timeoutMs, routing, healthIntervalMs } = this.config.remote;
    const replicas: Replica[] = p.upstreams.map((address, index) => {
      const dialect: Dialect = address.api === "openai" ? new OpenAIDialect(address.base) : new OllamaDialect(address.base);
      const key = keys[address.hostPort.toLowerCase()];
      return { index, address, dialect, base: address.base, label: address.base, ...(key ? { key } : {}), outstanding: 0, failures: 0, openUntil: 0, trial: false, unhealthy: false };
    });
    return new RemoteRunner(this.source(spec).model, new ReplicaPool(replicas, routing), new UpstreamHttp(timeoutMs), healthIntervalMs, this.onUpstream);
  }
}
