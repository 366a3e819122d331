// Reads OLLAMA_API_KEYS_FILE at daemon start. The file is refused (the daemon does not start) when
// other users could read or change it, when it is not a regular file (a FIFO would block the
// start), or when it is implausibly large; every message names the variable and the path, never a
// key. The daemon's keys are the file's plus OLLAMA_API_KEYS.
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { ApiKeySyntaxError, mergeApiKeys, parseApiKeysFile, type ApiKey } from "../api-keys.js";
import { ConfigError, type Config } from "../config.js";

const NAME = "OLLAMA_API_KEYS_FILE";
/** Ten thousand long keys fit; anything larger is not a keys file. */
export const MAX_KEYS_FILE_BYTES = 1 << 20;
/** Any permission for others, or write for the group: either could read or add keys. */
const UNSAFE_MODE_BITS = 0o027;

function openError(err: unknown, file: string): ConfigError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return new ConfigError(`${NAME}: ${file} does not exist`);
  if (code === "EACCES" || code === "EPERM") return new ConfigError(`${NAME}: ${file} cannot be read by this user (make it readable by the account the daemon runs as)`);
  return new ConfigError(`${NAME}: cannot read ${file}: ${(err as Error).message}`);
}

/** The keys in `file`, after the checks above (throws ConfigError, or ApiKeySyntaxError for its text). */
export async function readKeysFile(file: string, platform: NodeJS.Platform = process.platform): Promise<ApiKey[]> {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat on the handle then refuses it,
  // and checks the very file that is read.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch((err: unknown) => {
    throw openError(err, file);
  });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ConfigError(`${NAME}: ${file} is not a regular file`);
    if (platform !== "win32" && (st.mode & UNSAFE_MODE_BITS) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, "0");
      throw new ConfigError(`${NAME}: ${file} can be read or changed by other users (mode ${mode}); make it private: chmod 600 ${file}`);
    }
    if (st.size > MAX_KEYS_FILE_BYTES) throw new ConfigError(`${NAME}: ${file} is ${st.size} bytes; a keys file holds at most ${MAX_KEYS_FILE_BYTES}`);
    return parseApiKeysFile((await handle.readFile()).toString("utf8"), `${NAME} ${file}`);
  } finally {
    await handle.close();
  }
}

/**
 * Every key the daemon accepts: OLLAMA_API_KEYS, then the file's. Empty when neither variable is
 * set (no key needed). A file that holds no key while OLLAMA_API_KEYS is unset is refused: every
 * request would be.
 */
export async function loadApiKeys(config: Pick<Config, "apiKeys" | "apiKeysFile">): Promise<readonly ApiKey[]> {
  if (config.apiKeysFile === "") return config.apiKeys;
  let keys: ApiKey[];
  try {
    keys = mergeApiKeys(config.apiKeys, await readKeysFile(config.apiKeysFile));
  } catch (err) {
    // The key syntax module knows no variable names; its messages already say where.
    if (err instanceof ApiKeySyntaxError) throw new ConfigError(err.message);
    throw err;
  }
  if (keys.length === 0) {
    throw new ConfigError(`${NAME}: ${config.apiKeysFile} holds no keys, so every request would be refused; add one key per line, or unset ${NAME}`);
  }
  return Object.freeze(keys);
}
