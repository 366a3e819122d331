// Borderless tables laid out exactly as Ollama's CLI renders them with olekukonko/tablewriter v0.0.5
// (SetBorder(false), SetNoWhiteSpace(true), SetTablePadding("    "), left aligned, auto-wrap on):
// every cell is padded to its column width and followed by the padding, so rows end in 4 spaces;
// the header's last cell is followed by one space; cells wider than the column limit (30, or the
// value of colWidth) are word-wrapped with tablewriter's minimal-raggedness algorithm.

const ANSI = /\x1b\[(?:[0-9]{1,3}(?:;[0-9]{1,3})*)?[m|K]/g;
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\u200b-\u200f\u2060\ufe00-\ufe0f]$/u;

function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0x33ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/** Terminal columns taken by one character (go-runewidth's RuneWidth, approximately). */
export function charWidth(ch: string): number {
  const cp = ch.codePointAt(0) ?? 0;
  if (cp === 0 || ZERO_WIDTH.test(ch)) return 0;
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return 0;
  return isWide(cp) ? 2 : 1;
}

/** Terminal columns taken by a string, ANSI colour codes ignored. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s.replace(ANSI, "")) w += charWidth(ch);
  return w;
}

function padRight(s: string, width: number): string {
  const gap = width - displayWidth(s);
  return gap > 0 ? s + " ".repeat(gap) : s;
}

/** tablewriter's WrapWords: split words into lines with minimal raggedness. */
function wrapWords(words: string[], spc: number, lim: number, pen: number): string[][] {
  const n = words.length;
  const length: number[][] = [];
  for (let i = 0; i < n; i++) {
    const row = new Array<number>(n).fill(0);
    row[i] = displayWidth(words[i] ?? "");
    for (let j = i + 1; j < n; j++) row[j] = (row[j - 1] ?? 0) + spc + displayWidth(words[j] ?? "");
    length.push(row);
  }
  const nbrk = new Array<number>(n).fill(0);
  const cost = new Array<number>(n).fill(2 ** 31 - 1);
  for (let i = n - 1; i >= 0; i--) {
    const li = length[i] ?? [];
    if ((li[n - 1] ?? 0) <= lim) {
      cost[i] = 0;
      nbrk[i] = n;
    } else {
      for (let j = i + 1; j < n; j++) {
        const d = lim - (li[j - 1] ?? 0);
        let c = d * d + (cost[j] ?? 0);
        if ((li[j - 1] ?? 0) > lim) c += pen;
        if (c < (cost[i] ?? 0)) {
          cost[i] = c;
          nbrk[i] = j;
        }
      }
    }
  }
  const lines: string[][] = [];
  for (let i = 0; i < n; ) {
    const next = nbrk[i] ?? n;
    lines.push(words.slice(i, next));
    i = next;
  }
  return lines;
}

/** tablewriter's WrapString. */
export function wrapString(s: string, lim: number): string[] {
  const words = s.replace(/\n/g, " ").split(" ");
  for (const w of words) {
    const width = displayWidth(w);
    if (width > lim) lim = width;
  }
  return wrapWords(words, 1, lim, 1e5).map((line) => line.join(" "));
}

/** tablewriter's Title(): header cells are upper-cased, `_` and most `.` become spaces. */
function title(name: string): string {
  const origLen = name.length;
  const rs = [...name];
  const numOrSpace = (r: string | undefined) => r !== undefined && /[0-9 ]/.test(r);
  for (let i = 0; i < rs.length; i++) {
    if (rs[i] === "_") rs[i] = " ";
    else if (rs[i] === ".") {
      if ((i !== 0 && !numOrSpace(rs[i - 1])) || (i !== rs.length - 1 && !numOrSpace(rs[i + 1]))) rs[i] = " ";
    }
  }
  let out = rs.join("").trim();
  if (out.length === 0 && origLen > 0) out = " ";
  return out.toUpperCase();
}

export interface TableOptions {
  header?: string[];
  /** Maximum cell width before wrapping (tablewriter's SetColWidth; default 30). */
  colWidth?: number;
  padding?: string;
}

/** Render rows (and an optional header) the way Ollama's `list`, `ps` and `show` do. */
export function renderTable(rows: string[][], opts: TableOptions = {}): string {
  const maxWidth = opts.colWidth ?? 30;
  const padding = opts.padding ?? "    ";
  const cs = new Map<number, number>();
  const rs = new Map<number, number>();

  const parseDimension = (str: string, colKey: number, rowKey: number): string[] => {
    let raw = str.split("\n");
    let width = 0;
    for (const line of raw) width = Math.max(width, displayWidth(line));
    if (width > maxWidth) width = maxWidth;
    let newWidth = width;
    const wrapped: string[] = [];
    raw = [raw.join(" ")];
    raw.forEach((para, i) => {
      const lines = wrapString(para, width);
      for (const line of lines) newWidth = Math.max(newWidth, displayWidth(line));
      if (i > 0) wrapped.push(" ");
      wrapped.push(...lines);
    });
    const v = cs.get(colKey);
    if (v === undefined || v < newWidth || v === 0) cs.set(colKey, newWidth);
    const h = rs.get(rowKey);
    if (h === undefined || h < wrapped.length || h === 0) rs.set(rowKey, wrapped.length);
    return wrapped;
  };

  const header = opts.header?.map((h, i) => parseDimension(h, i, -1));
  const lines = rows.map((row, n) => row.map((cell, i) => parseDimension(cell, i, n)));

  let out = "";
  if (header && header.length > 0) {
    const end = cs.size - 1;
    const height = rs.get(-1) ?? 0;
    for (let x = 0; x < height; x++) {
      for (let y = 0; y <= end; y++) {
        const h = header[y]?.[x] ?? "";
        out += padRight(title(h), cs.get(y) ?? 0) + (y === end ? " " : padding);
      }
      out += "\n";
    }
  }
  lines.forEach((columns, rowIdx) => {
    const height = rs.get(rowIdx) ?? 0;
    for (const col of columns) while (col.length < height) col.push("  ");
    for (let x = 0; x < height; x++) {
      for (let y = 0; y < columns.length; y++) out += padRight(columns[y]?.[x] ?? "", cs.get(y) ?? 0) + padding;
      out += "\n";
    }
  });
  return out;
}
