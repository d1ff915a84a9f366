#!/usr/bin/env bash
# The test suite on any machine, fresh ones included: as root with apt, installs what the tests'
# real parts need (sshd, rsync, cmake, iproute2, python3, Slurm and munge, headless Chromium); then runs `cargo test` and lists the
# tests whose real part could not run here (SKIPPED <test>: <why>) with their count. Under CI
# (CI=true) such a test fails instead of skipping. Opt-in tests (minutes of downloads, e.g. the
# real DatasetRT: EXPR_REAL_DATASET_RT=1) are listed as `SKIPPED … (opt-in: VAR=1)` and counted
# apart; they never fail CI for not running.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    need=()
    [ -x /usr/sbin/sshd ] || need+=(openssh-server)
    command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
    command -v rsync >/dev/null 2>&1 || need+=(rsync)
    command -v cmake >/dev/null 2>&1 || need+=(cmake)
    command -v ip >/dev/null 2>&1 || need+=(iproute2)
    command -v python3 >/dev/null 2>&1 || need+=(python3)
    [ -x /usr/sbin/slurmctld ] || need+=(slurmctld)
    [ -x /usr/sbin/slurmd ] || need+=(slurmd)
    command -v srun >/dev/null 2>&1 || need+=(slurm-client)
    [ -x /usr/sbin/munged ] || need+=(munge)
    # report.html in a real browser (tests/html.rs)
    command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 \
        || need+=(chromium-headless-shell)
    if [ ${#need[@]} -gt 0 ]; then
        echo "tests: installing ${need[*]}" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    fi
    mkdir -p /run/sshd && chmod 755 /run/sshd
else
    echo "tests: not root with apt: nothing installed; tests whose real part is missing say SKIPPED" >&2
fi

skipped="${CARGO_TARGET_DIR:-target}/tmp/expr-skipped.txt"
rm -f "$skipped"
# The user's history is not the tests': a test's run in the checkout registers in its own file
# (tests/common: Test), and whatever else expr the tests start registers in this run's own
# database; the project's and the one $EXPR_HISTORY names are the same after the tests.
real=("results/.expr-history.sqlite")
[ -n "${EXPR_HISTORY:-}" ] && real+=("$EXPR_HISTORY")
fingerprint() {
    for f in "${real[@]}"; do
        for x in "$f" "$f-wal"; do
            if [ -e "$x" ]; then echo "$x $(sha256sum <"$x" | cut -c1-64)"; else echo "$x absent"; fi
        done
    done
}
before=$(fingerprint)
own=$(mktemp -d)
export EXPR_HISTORY="$own/tests-history.sqlite"
cargo test "$@"
rc=$?
after=$(fingerprint)
rm -rf "$own"
if [ "$before" != "$after" ]; then
    echo "tests: FAILED: the tests changed the user's history:"
    diff <(echo "$before") <(echo "$after")
    rc=1
else
    echo "tests: the user's history is unchanged (${real[*]})"
fi
n=0
o=0
if [ -s "$skipped" ]; then
    echo
    sort -u "$skipped"
    n=$(sort -u "$skipped" | grep -vc '(opt-in: ')
    o=$(sort -u "$skipped" | grep -c '(opt-in: ')
fi
echo "tests: $n skipped (a real part they need is missing here), $o opt-in not asked for (see each line's variable)"
exit $rc
