// Writes the packagers' service files in this directory from src/service/packaged.ts:
//   npx tsx scripts/service/generate.ts
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { packagedServiceFiles } from "../../src/service/packaged.js";

const here = dirname(fileURLToPath(import.meta.url));
for (const f of packagedServiceFiles()) {
  writeFileSync(join(here, f.name), f.text);
  process.stdout.write(`${f.name} → ${f.installTo}\n`);
}
