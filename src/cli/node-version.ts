// The oldest Node.js ollamats runs on (package.json "engines" says the same; a test keeps them
// equal). Older ones fail somewhere inside with a message about something else (Node 18's
// `serve`: "Invalid regular expression flags"), so the command checks first and says what to do.
export const MIN_NODE = "20.19.0";

/** Whether `version` ("18.20.8", without the v) is older than MIN_NODE. */
export function nodeTooOld(version: string): boolean {
  const have = version.split(".").map((n) => Number.parseInt(n, 10) || 0);
  const need = MIN_NODE.split(".").map(Number);
  for (let i = 0; i < need.length; i++) {
    if ((have[i] ?? 0) !== need[i]) return (have[i] ?? 0) < need[i]!;
  }
  return false;
}
