// `ollamats serve` (alias `start`): run the daemon in the foreground. The daemon's modules are
// imported only here, so every other command starts without loading them.
import { setFlagsFromString } from "node:v8";
import type { Invocation } from "../command-line.js";
import { cliConfig } from "../connect.js";

export async function serve(_inv: Invocation): Promise<void> {
  const config = cliConfig();
  // A daemon mostly waits: its young generation stays at its initial size instead of growing
  // to 16 MB semi-spaces during a multi-GB upload or pull and staying there (measured: idle RSS
  // after creating the 622 MB bench model 105 → 90 MB). Set at run time, it applies from the
  // next growth on; nothing on the token path allocates enough to notice.
  setFlagsFromString("--semi-space-growth-factor=1");
  const { serveForever } = await import("../../daemon/serve.js");
  await serveForever(config);
}
