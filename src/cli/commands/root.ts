// `ollamats` alone prints the help; `ollamats -v` the server's version, and the client's when it
// differs or no server answers (Ollama's versionHandler).
import { flagBool, NAME, type Invocation } from "../command-line.js";
import { ROOT } from "../commands.js";
import { helpText } from "../help.js";
import { cliVersion } from "../version.js";

export async function root(inv: Invocation): Promise<void> {
  if (!flagBool(inv, "version")) {
    process.stdout.write(helpText(ROOT, []));
    return;
  }
  const { connect } = await import("../connect.js");
  let serverVersion = "";
  try {
    serverVersion = await connect().version();
  } catch {
    process.stdout.write(`Warning: could not connect to a running ${NAME} instance\n`);
  }
  if (serverVersion !== "") process.stdout.write(`${NAME} version is ${serverVersion}\n`);
  if (serverVersion !== cliVersion()) process.stdout.write(`Warning: client version is ${cliVersion()}\n`);
}
