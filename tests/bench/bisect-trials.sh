#!/bin/bash
# bisect-trials.sh [TRIALS] [FIXED_N]: seeded trials of `expr bisect` on the test repository
# (tests/fixtures/bisect/make-repo.sh: commit 7 of 12 is 15 % slower under ±20 % jitter, commit 5
# does not build, commit 8 fails its test), each run twice — the adaptive bisection and a
# fixed-repeat one (`--fixed-repeat FIXED_N`, default 24 runs per commit, nearer mean wins) — and
# for each mode: how many trials named commit 7, and the runs (point runs, references included)
# spent. EXPR=path/to/expr (default target/release/expr, else target/debug/expr).
set -uo pipefail
trials=${1:-20}; fixed=${2:-24}
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
    repeat 8
}
KDL
for mode in adaptive fixed; do
  found=0; runs=0; list=""
  for t in $(seq 1 "$trials"); do
    extra=(); [ $mode = fixed ] && extra=(--fixed-repeat "$fixed")
    out=$("$expr" bisect "$tmp/exp.kdl" --metric lat --good HEAD~11 --bad HEAD --set "seed=$mode$t" \
          --output "$tmp/b-$mode-$t" --history "$tmp/h.sqlite" "${extra[@]}" 2>/dev/null)
    r=$(echo "$out" | sed -n 's/^spent: .*rounds, \([0-9]*\) runs.*/\1/p')
    runs=$((runs + ${r:-0})); list="$list ${r:-?}"
    if echo "$out" | grep -q "first bad commit: $want"; then found=$((found + 1)); else list="$list(miss)"; fi
  done
  echo "$mode: found commit 7 in $found of $trials trials; runs per trial:$list; mean $((runs / trials))"
done
