#!/usr/bin/env bash
# The README's first command: make a demo model, start the daemon if it is not running,
# create the model in the daemon's store and run a prompt on it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/cli/main.js ] || npm run build
ollamats() { node dist/cli/main.js "$@"; }

model=$(npx tsx scripts/make-test-model.ts --shape small --type Q8_0 --seed 1)
echo "demo model: $model"

if ! ollamats list >/dev/null 2>&1; then
  log="${TMPDIR:-/tmp}/ollamats-serve.log"
  nohup node dist/cli/main.js serve >"$log" 2>&1 &
  echo "started ollamats serve (pid $!, log $log)"
  for _ in $(seq 1 50); do ollamats list >/dev/null 2>&1 && break; sleep 0.2; done
fi

dir=$(mktemp -d)
cat >"$dir/Modelfile" <<MODELFILE
FROM $model
SYSTEM You are a demo model with random weights: expect word salad.
PARAMETER temperature 0.8
PARAMETER num_predict 48
MODELFILE
ollamats create demo -f "$dir/Modelfile"
rm -rf "$dir"
ollamats run demo "Why is the sky blue?"
echo
echo "The daemon keeps running: try 'node dist/cli/main.js run demo' (or 'npx ollamats run demo')."
