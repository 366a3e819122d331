// The backends a daemon serves models with; each model goes to the first backend that handles
// its spec. The list itself is built in backends/index.ts (one line per backend).
import type { ModelSpec } from "../registry/model-spec.js";
import type { Backend } from "./backend.js";

export class Backends {
  constructor(readonly all: readonly Backend[]) {}

  /** The backend that serves this model; throws when none handles it (a daemon misconfiguration). */
  for(spec: ModelSpec): Backend {
    const b = this.all.find((x) => x.handles(spec));
    if (!b) throw new Error(`no backend can serve ${spec.shortName} (source ${spec.source.kind})`);
    return b;
  }
}
