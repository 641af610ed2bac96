#!/usr/bin/env bash
# The C sources follow .clang-format (`make format` applies it): a
# change that does not is named with the lines clang-format would move.
# Skips without clang-format; CI installs it (tools/install-deps).
source "$(dirname "$0")/functions.sh"
requires clang-format --version
cd "$top"
# The frontends are every folder with a descriptor.c: a new one is
# checked by being there.
frontends=$(ls -d */descriptor.c | xargs -n1 dirname)
files=$(find backends bench common core fuzz include tests tools $frontends \
          -name '*.[ch]' | sort)
[ -n "$files" ] || fail "no C sources found under $top"
bad=0 n=0
for f in $files; do
  n=$((n + 1))
  if ! clang-format "$f" | diff -u "$f" - > "$tmp/diff"; then
    echo "not formatted: $f ($(grep -c '^-[^-]' "$tmp/diff") lines)"
    head -20 "$tmp/diff"
    bad=$((bad + 1))
  fi
done
[ "$bad" -eq 0 ] || fail "$bad of $n files differ from .clang-format: run make format"
echo "ok: $n C files follow .clang-format ($(clang-format --version | grep -o 'version [0-9.]*'))"
