// Sizes as Ollama's logs print them (format.HumanBytes2: binary units with one decimal).
const MiB = 1024 ** 2;

export function humanBytes2(b: number): string {
  if (b >= 1024 ** 3) return `${(b / 1024 ** 3).toFixed(1)} GiB`;
  if (b >= MiB) return `${(b / MiB).toFixed(1)} MiB`;
  if (b >= 1024) return `${(b / 1024).toFixed(1)} KiB`;
  return `${b} B`;
}
