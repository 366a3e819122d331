// Ollama's chat-template autodetection at create (server/model.go detectChatTemplate, template.Named):
// a GGUF's tokenizer.chat_template is compared with the Jinja templates Ollama knows
// (ollama-templates.ts, in index order) by Levenshtein distance over characters (runes); the
// nearest, when nearer than 100 edits, names the Go template written as the model's TEMPLATE
// layer, with that template's stop parameters as its params.
import { GO_TEMPLATES, TEMPLATE_INDEX, type NamedGoTemplate } from "./ollama-templates.js";

/** Ollama's threshold: a match must be nearer than this many edits. */
const MAX_DISTANCE = 100;

export interface DetectedTemplate extends NamedGoTemplate {
  name: string;
}

/** The Go template Ollama would use for this Jinja chat template, if any. */
export function detectChatTemplate(jinja: string | undefined): DetectedTemplate | undefined {
  if (!jinja) return undefined;
  const a = codePoints(jinja);
  let best: string | undefined;
  let score = MAX_DISTANCE;
  for (const t of TEMPLATE_INDEX) {
    // the distance is at least the difference in length: most candidates end here
    const b = codePoints(t.template);
    if (Math.abs(a.length - b.length) >= score) continue;
    const d = boundedLevenshtein(a, b, score);
    if (d < score) {
      score = d;
      best = t.name;
    }
  }
  const go = best === undefined ? undefined : GO_TEMPLATES[best];
  return go && best ? { name: best, ...go } : undefined;
}

function codePoints(s: string): number[] {
  const out: number[] = [];
  for (const c of s) out.push(c.codePointAt(0)!);
  return out;
}

/**
 * The Levenshtein distance of a and b when it is below `limit`, else `limit`: only the diagonal
 * band |i - j| < limit can hold a path cheaper than that (Ukkonen), so this is O(n·limit).
 */
export function boundedLevenshtein(a: readonly number[], b: readonly number[], limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  const n = b.length;
  const big = limit + 1;
  let prev = new Array<number>(n + 1);
  let cur = new Array<number>(n + 1);
  for (let j = 0; j <= n; j++) prev[j] = j < limit ? j : big;
  for (let i = 1; i <= a.length; i++) {
    const lo = Math.max(1, i - limit + 1);
    const hi = Math.min(n, i + limit - 1);
    cur.fill(big);
    cur[0] = i < limit ? i : big;
    let rowMin = cur[0]!;
    const ai = a[i - 1];
    for (let j = lo; j <= hi; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ai === b[j - 1] ? 0 : 1));
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin >= limit) return limit;
    [prev, cur] = [cur, prev];
  }
  return Math.min(prev[n]!, limit);
}
