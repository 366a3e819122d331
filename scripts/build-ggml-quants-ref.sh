#!/usr/bin/env bash
# Builds scripts/ggml-quants-ref.c against ggml-quants.c of the llama.cpp source that
# node-llama-cpp's package ships (the same commit as the engine), for the test that our quantizers
# write ggml's bytes. Baseline x86-64 flags, no FMA contraction: the arithmetic of a generic build.
# Cached under .cache/ggml-quants-ref/, keyed by the bundle's commit and the harness's hash; prints
# the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$bundle" ] || { echo "build-ggml-quants-ref: $bundle is missing (run npm ci first)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "build-ggml-quants-ref: gcc is needed (apt-get install gcc)" >&2; exit 1; }
commit=$(git bundle list-heads "$bundle" | awk 'NR==1 {print $1}')
key="${commit:0:12}-$(sha1sum scripts/ggml-quants-ref.c | cut -c1-8)"
. scripts/build-cache.sh
cached_build ggml-quants-ref "$key" ggml-quants-ref
git clone -q --no-checkout "$bundle" "$work/src" >&2
git -C "$work/src" checkout -q "$commit" -- ggml/include ggml/src/ggml-quants.c ggml/src/ggml-quants.h ggml/src/ggml-common.h ggml/src/ggml-impl.h ggml/src/ggml-cpu >&2
g="$work/src/ggml"
gcc -O2 -ffp-contract=off -w -I"$g/include" -I"$g/src" -c "$g/src/ggml-quants.c" -o "$work/ggml-quants.o"
mkdir -p "$out"
gcc -O2 -ffp-contract=off -I"$g/include" -I"$g/src" scripts/ggml-quants-ref.c "$work/ggml-quants.o" -lm -o "$out/ggml-quants-ref.tmp"
mv "$out/ggml-quants-ref.tmp" "$out/ggml-quants-ref"
echo "$PWD/$out/ggml-quants-ref"
