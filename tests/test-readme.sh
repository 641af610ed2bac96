#!/usr/bin/env bash
# Every command block in the README carries a marker saying how the suite
# treats it, and the runnable ones run exactly as written, from the top
# of the tree, with one substitution (the README says so too): the plugin
# named `blkemu` on an nbdkit line is the build tree's.  `make` lines are not run (the suite runs on a built tree);
# servers a block leaves running on the README's paths are stopped after
# it (only those: other tests' servers run beside this one).
#   <!-- readme-test: run -->         run the block; it must succeed
#   <!-- readme-test: transcript -->  "$ COMMAND" then its output: run
#                                     COMMAND, expect the output in its
#                                     stderr+stdout
#   <!-- readme-test: output: WHY --> example output, not commands
#   <!-- readme-test: skip: WHY -->   listed with the reason
source "$(dirname "$0")/functions.sh"
requires nbdinfo --version
requires blkparse -V
readme=$top/README.md

# Split the README into blocks: each is an indented run after a blank
# line, with the marker found in the three lines before it.
awk -v dir="$tmp" '
  /^<!-- readme-test: / { marker = $0; mline = NR }
  /^    / && prev ~ /^$/ && !inb {
    inb = 1; n++
    m = (NR - mline <= 3) ? marker : "none"
    sub(/^<!-- readme-test: /, "", m); sub(/ -->$/, "", m)
    print m > (dir "/block" n ".kind")
  }
  inb && /^    / { line = $0; sub(/^    /, "", line); print line > (dir "/block" n ".sh") }
  inb && !/^    / && !/^$/ { inb = 0 }
  { prev = $0 }
  END { print n > (dir "/count") }' "$readme"

# The one substitution: nbdkit's plugin `blkemu` is the build tree's.
plugin_rule () {
  sed -E 's#^(nbdkit( +-[^ ]+( +[^- ][^ ]*)?)*) +blkemu( |$)#\1 '"$PLUGIN"'\4#'
}

# The README's fixed paths, left behind by an interrupted run.
readme_paths="/tmp/leg.sock /tmp/leg.ctl /tmp/leg.json /tmp/d.sock /tmp/d.ctl /tmp/d.bt /tmp/c.sock /tmp/c.ctl"
rm -f $readme_paths
n=$(cat "$tmp/count")
ran=0 listed=0
cd "$top"
for i in $(seq "$n"); do
  kind=$(cat "$tmp/block$i.kind")
  first=$(head -1 "$tmp/block$i.sh")
  case $kind in
    run)
      grep -v '^make$' "$tmp/block$i.sh" | plugin_rule > "$tmp/run$i.sh"
      before=$( { pgrep -x nbdkit || true; } | tr "\n" " ")
      if ! bash -euo pipefail "$tmp/run$i.sh" > "$tmp/out$i" 2>&1; then
        cat "$tmp/out$i"
        fail "README block $i ($first) failed"
      fi
      # Only the servers the block started: new, and on a README path
      # (other tests' servers run beside this one under meson).
      for p in $(pgrep -x nbdkit); do
        case " $before " in *" $p "*) continue ;; esac
        args=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null) || continue
        for path in $readme_paths; do
          case " $args" in *" $path "*|*"=$path "*) kill "$p" 2>/dev/null || true; break ;; esac
        done
      done
      echo "ok: block $i ran: $first"
      ran=$((ran + 1)) ;;
    transcript)
      cmd=$(sed -n 's/^\$ //p' "$tmp/block$i.sh" | head -1 | plugin_rule)
      want=$(grep -v '^\$ ' "$tmp/block$i.sh")
      if bash -c "$cmd" > "$tmp/out$i" 2>&1; then
        fail "README block $i: '$cmd' succeeded; the README shows it failing"
      fi
      grep -qF -- "$want" "$tmp/out$i" ||
        fail "README block $i: '$cmd' printed: $(cat "$tmp/out$i"), the README shows: $want"
      echo "ok: block $i transcript: $first"
      ran=$((ran + 1)) ;;
    output:*|skip:*)
      echo "listed: block $i ($first): ${kind#*: }"
      listed=$((listed + 1)) ;;
    *)
      fail "README block $i ($first) has no readme-test marker" ;;
  esac
done
echo "ok: README: $ran blocks run as written, $listed listed with the reason"
rm -f $readme_paths
