# Sourced by scripts/build-*.sh. `cached_build NAME KEY BINARY`: one build at a time under
# .cache/NAME/.lock (tests and CI may ask at once; the others wait, then find it cached); when
# .cache/NAME/KEY/BINARY exists, prints its path and exits; else sets $out (that folder) and $work
# (a temporary folder, removed on exit) for the build.
cached_build() {
  out=".cache/$1/$2"
  mkdir -p ".cache/$1"
  exec 9>".cache/$1/.lock"
  flock 9
  if [ -x "$out/$3" ]; then
    echo "$PWD/$out/$3"
    exit 0
  fi
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1-build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}
