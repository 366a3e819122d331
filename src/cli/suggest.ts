// "Did you mean this?" candidates, chosen as cobra chooses them: a case-insensitive Levenshtein
// distance of at most 2, or a name that starts with what was typed.

/** Levenshtein distance, case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    prev = cur;
  }
  return prev[t.length] ?? 0;
}

export const MAX_SUGGESTION_DISTANCE = 2;

/** The names close to `typed`, in table order. */
export function suggestionsFor(typed: string, names: readonly string[]): string[] {
  if (typed === "") return [];
  return names.filter((n) => editDistance(typed, n) <= MAX_SUGGESTION_DISTANCE || n.toLowerCase().startsWith(typed.toLowerCase()));
}
