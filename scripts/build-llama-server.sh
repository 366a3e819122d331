#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` from the llama.cpp source that node-llama-cpp's package
# ships (node_modules/node-llama-cpp/llama/gitRelease.bundle), so the remote-backend tests and the
# bench run a real llama-server of the very engine version ollamats uses. CPU only, the server
# target only, Release, generic x86-64 flags with AVX2/AVX-512 (a -march=native build needs a
# gcc fix on Debian 12 and was slower), no curl, no OpenMP. Cached under .cache/llama-server/,
# keyed by the bundle's commit and these flags: a second run prints the cached path at once.
#
#   scripts/build-llama-server.sh        → prints the binary's path (builds it when missing)
#   JOBS=4 scripts/build-llama-server.sh → more parallel compile jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$bundle" ] || { echo "build-llama-server: $bundle is missing (run npm ci first)" >&2; exit 1; }
command -v cmake >/dev/null || { echo "build-llama-server: cmake is needed (apt-get install cmake g++)" >&2; exit 1; }

# The binary runs only here (cached per checkout), so each instruction set is on when this CPU has
# it: AVX-512 on a machine without it would die of SIGILL.
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null && echo ON || echo OFF; }
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_AVX="$(has avx)" -DGGML_AVX2="$(has avx2)"
  -DGGML_FMA="$(has fma)" -DGGML_F16C="$(has f16c)" -DGGML_AVX512="$(has avx512f)"
  -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON)
commit=$(git bundle list-heads "$bundle" | awk 'NR==1 {print substr($1, 1, 12)}')
key="$commit-$(printf '%s ' "${flags[@]}" | sha1sum | cut -c1-8)"
. scripts/build-cache.sh
cached_build llama-server "$key" llama-server
git clone -q "$bundle" "$work/src" >&2
git -C "$work/src" checkout -q "$(git bundle list-heads "$bundle" | awk 'NR==1 {print $1}')" >&2
cmake -S "$work/src" -B "$work/build" "${flags[@]}" >&2
cmake --build "$work/build" --target llama-server -j "${JOBS:-2}" >&2
mkdir -p "$out"
cp "$work/build/bin/llama-server" "$out/llama-server.tmp"
mv "$out/llama-server.tmp" "$out/llama-server"
echo "$PWD/$out/llama-server"
