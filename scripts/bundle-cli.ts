// The last build step (`npm run build`, after tsc): dist/cli/main.js becomes an esbuild bundle of
// the command line, split into dist/cli/chunk-*.js along its lazy imports, so a command loads a
// few files instead of one ES module per source file, each of which costs Node's ESM loader a
// resolve, a read and a compile (`run m "hi"`: 9 files, not 21; 4-5 ms less CPU and wall for
// run, --version and list; docs/performance.md "CLI start-up"). The daemon (src/daemon/,
// src/backends/) is not bundled: `serve` imports tsc's modules as before, whose import.meta.url
// must stay where they are. The chunks stay beside main.js, where tsc's modules in dist/cli/ live,
// so relative paths (version.ts's ../../package.json, the daemon's imports) mean the same from
// either.
//
//   tsx scripts/bundle-cli.ts      (run by `npm run build`)
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const DIST = fileURLToPath(new URL("../dist/", import.meta.url));
const CLI_DIR = path.join(DIST, "cli");
const UNBUNDLED = ["daemon", "backends"].map((d) => path.join(DIST, d) + path.sep);

/** Imports of the daemon's modules stay imports, their paths made relative to dist/cli/. */
const daemonStaysOut: esbuild.Plugin = {
  name: "daemon-stays-out",
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = path.resolve(args.resolveDir, args.path);
      if (!UNBUNDLED.some((dir) => target.startsWith(dir))) return undefined;
      const relative = path.relative(CLI_DIR, target).split(path.sep).join("/");
      return { path: relative.startsWith(".") ? relative : `./${relative}`, external: true };
    });
  },
};

// chunks of an earlier build would otherwise pile up (their names carry a content hash)
for (const name of readdirSync(CLI_DIR)) if (/^chunk-.*\.js(\.map)?$/.test(name)) rmSync(path.join(CLI_DIR, name));

await esbuild.build({
  entryPoints: [path.join(CLI_DIR, "main.js")],
  outdir: CLI_DIR,
  allowOverwrite: true, // main.js is tsc's entry in, the bundle's out
  bundle: true,
  splitting: true,
  chunkNames: "chunk-[hash]",
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external", // yargs, undici, … load from node_modules as before
  sourcemap: true, // through tsc's maps, back to src/
  plugins: [daemonStaysOut],
  logLevel: "warning",
});
