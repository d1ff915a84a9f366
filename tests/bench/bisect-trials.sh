#!/bin/bash
# bisect-trials.sh [TRIALS] [FIXED_N[,FIXED_N…]]: seeded trials of `expr bisect` on the test
# repository (tests/fixtures/bisect/make-repo.sh: commit 7 of 12 is 15 % slower under ±20 %
# jitter, commit 5 does not build, commit 8 fails its test), each seed run by every mode — the
# adaptive bisection (the bench's `repeat $REPEAT`, default `min=2 max=80 until-cv=2`: 2 runs per round, at
# most 80 per commit) and a fixed-repeat one per FIXED_N (`--fixed-repeat N` runs per commit,
# nearer mean wins; default 24) — and for each mode: how many trials named commit 7, the runs
# (point runs, references included) spent per trial, their mean and max, and the wall time.
# EXPR=path/to/expr (default target/release/expr, else target/debug/expr).
set -uo pipefail
trials=${1:-20}; fixed=${2:-24}; repeat=${REPEAT:-min=2 max=80 until-cv=2}
here=$(cd "$(dirname "$0")/../.." && pwd)
expr=${EXPR:-$here/target/release/expr}; [ -x "$expr" ] || expr=$here/target/debug/expr
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bash "$here/tests/fixtures/bisect/make-repo.sh" "$tmp/repo" >/dev/null
want=$(git -C "$tmp/repo" rev-parse HEAD~4)
mkdir -p "$tmp/noise"
cat > "$tmp/exp.kdl" <<KDL
experiment slowdown {
    description "a 15 % slowdown buried in ±20 % noise"
}

host local repo="$tmp/repo"

bench lat {
    param seed "1"
    param noise "$tmp/noise"
    build "sh build.sh"
    test "sh test.sh"
    run "python3 bench.py {{ seed }} {{ noise }}"
    collect "regex" pattern="lat=(?P<lat>[0-9.]+)" metric="lat" direction="lower"
    repeat $repeat
}
KDL
echo "expr: $expr; $trials trials per mode; adaptive: repeat $repeat"
for mode in adaptive ${fixed//,/ }; do
  found=0; runs=0; max=0; list=""; t0=$(date +%s)
  for t in $(seq 1 "$trials"); do
    extra=(); name=adaptive
    [ "$mode" != adaptive ] && extra=(--fixed-repeat "$mode") && name="fixed $mode"
    # the jitter: seeded by the trial and a counter shared by every run (each run differs)
    out=$("$expr" bisect "$tmp/exp.kdl" --metric lat --good HEAD~11 --bad HEAD --set "seed=trial$t" \
          --output "$tmp/b-$mode-$t" --history "$tmp/h.sqlite" "${extra[@]}" 2>/dev/null)
    r=$(echo "$out" | sed -n 's/^spent: .*rounds, \([0-9]*\) runs.*/\1/p')
    runs=$((runs + ${r:-0})); list="$list ${r:-?}"; [ "${r:-0}" -gt "$max" ] && max=${r:-0}
    if echo "$out" | grep -q "first bad commit: $want"; then found=$((found + 1)); else list="$list(miss)"; fi
  done
  echo "$name: found commit 7 in $found of $trials trials; runs mean $((runs / trials)), max $max; per trial:$list; $(( $(date +%s) - t0 )) s"
done
