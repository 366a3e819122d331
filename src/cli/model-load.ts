// Load or unload a model with an empty generate request (cmd.go loadOrUnloadModel), showing a
// spinner on stderr while the daemon works.

import type { Client } from "../api/client.js";
import type { KeepAlive, ThinkValue } from "../api/types.js";
import { Progress, Spinner } from "./progress.js";

export interface LoadOptions {
  model: string;
  keepAlive?: KeepAlive;
  think?: ThinkValue;
}

export async function loadOrUnload(client: Client, opts: LoadOptions): Promise<void> {
  const progress = new Progress(process.stderr);
  progress.add(new Spinner(""));
  try {
    await client.show({ model: opts.model });
    await client.generate(
      {
        model: opts.model,
        ...(opts.keepAlive !== undefined ? { keep_alive: opts.keepAlive } : {}),
        // sent so a model without thinking support fails here, before the first prompt
        ...(opts.think !== undefined ? { think: opts.think } : {}),
      },
      () => {},
    );
  } finally {
    progress.stopAndClear();
  }
}
