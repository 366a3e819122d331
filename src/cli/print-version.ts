// `ollamats -v` (Ollama's versionHandler): the server's version, and the client's when it differs
// or no server answers.
import { ResponseError } from "../api/client.js";
import { NAME } from "./args.js";
import { apiKeyHint, connect } from "./connect.js";
import { cliVersion } from "./version.js";

export async function printVersion(): Promise<void> {
  let serverVersion = "";
  try {
    serverVersion = await connect().version();
  } catch (err) {
    const refused = err instanceof ResponseError && err.status === 401;
    process.stdout.write(refused ? `Warning: ${apiKeyHint()}\n` : `Warning: could not connect to a running ${NAME} instance\n`);
  }
  if (serverVersion !== "") process.stdout.write(`${NAME} version is ${serverVersion}\n`);
  if (serverVersion !== cliVersion()) process.stdout.write(`Warning: client version is ${cliVersion()}\n`);
}
