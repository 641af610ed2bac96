# Shared by the bench scripts (sourced): each target named in a script's
# header is checked with bench_target, and bench_verdict ends the script
# with status 1 when one was missed, unless --no-check was given
# (bench_no_check=1).  The figures are printed either way.

bench_no_check=0
bench_missed=()
bench_met=0

# bench_target WHAT VALUE OP LIMIT: OP is ge (VALUE >= LIMIT), le, lt,
# or within (|VALUE| <= LIMIT).  An empty or non-numeric VALUE is a miss.
bench_target () {
  local what=$1 value=$2 op=$3 limit=$4 ok
  ok=$(awk -v v="$value" -v op="$op" -v l="$limit" 'BEGIN {
         if (v !~ /^[-+]?[0-9.]+(e[-+]?[0-9]+)?$/) { print 0; exit }
         if (op == "ge") print (v + 0 >= l + 0)
         else if (op == "le") print (v + 0 <= l + 0)
         else if (op == "lt") print (v + 0 < l + 0)
         else if (op == "within") print ((v < 0 ? -v : v) <= l + 0)
         else print 0 }')
  if [ "$ok" = 1 ]; then
    bench_met=$((bench_met + 1))
  else
    bench_missed+=("$what: $value, target $op $limit")
  fi
}

# bench_verdict NAME: the targets' summary; exits 1 on a miss unless
# --no-check.
bench_verdict () {
  local m
  echo
  echo "$1 targets: $bench_met met, ${#bench_missed[@]} missed"
  for m in "${bench_missed[@]}"; do
    echo "  MISSED: $m"
  done
  if [ ${#bench_missed[@]} -gt 0 ] && [ "$bench_no_check" = 0 ]; then
    exit 1
  fi
  exit 0
}
