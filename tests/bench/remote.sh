#!/bin/bash
# remote.sh [BEFORE] [AFTER]: the same 8-point `bench` (a `serve` of a tiny Python TCP server and
# a `run "true"`) on `local` and on an ssh host on loopback whose rc file takes 0.3 s, for two expr
# binaries side by side (default: target/release/expr, else target/debug/expr, for both).
# Prints one markdown table: whole run, fixed cost (preflight, calibration, closing), per point,
# and ssh commands in all and per point. Each figure is from a 1-point and an 8-point run
# (per point = (t8 - t1) / 7, fixed = t1 - per point), best of ROUNDS (default 2).
# Needs root (the sshd logs in as root) and /usr/sbin/sshd. The slow rc file is the sshd's
# ForceCommand (`sleep 0.3; export EXPR_RC_VAR=…` before the command), so root's own
# ~/.bashrc runs too: RC below is the measured cost of one `ssh host true` over the
# multiplexed connection. SETUP_ONLY=1 starts the sshd, prints "TMPDIR SSHD_PID" and leaves both
# (for trying by hand; kill the pid and remove the directory after).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
def=$here/target/release/expr; [ -x "$def" ] || def=$here/target/debug/expr
before=$(realpath "${1:-$def}"); after=$(realpath "${2:-$def}"); rounds=${ROUNDS:-2}
[ "$(id -u)" = 0 ] && [ -x /usr/sbin/sshd ] || { echo "SKIPPED: needs root and /usr/sbin/sshd" >&2; exit 0; }
tmp=$(mktemp -d); sshd_pid=
cleanup() { [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
[ -n "${SETUP_ONLY:-}" ] && trap - EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port); srv_port=$(free_port)
mkdir -p /run/sshd "$tmp/wrap" "$tmp/repo"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_ed25519"; ssh-keygen -q -t ed25519 -N '' -f "$tmp/client_ed25519"
cp "$tmp/client_ed25519.pub" "$tmp/authorized_keys"
cat > "$tmp/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/host_ed25519
PidFile $tmp/sshd.pid
AuthorizedKeysFile $tmp/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 50
ForceCommand sleep 0.3; export EXPR_RC_VAR=from-rc; eval "\$SSH_ORIGINAL_COMMAND"
CFG
cat > "$tmp/ssh_config" <<CFG
Host exprbench
  HostName 127.0.0.1
  Port $port
  User root
  IdentityFile $tmp/client_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  KexAlgorithms curve25519-sha256
CFG
/usr/sbin/sshd -D -f "$tmp/sshd_config" -E "$tmp/sshd.log" & sshd_pid=$!
until (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do sleep 0.01; done
# every ssh expr starts is counted
printf '#!/bin/sh\necho x >> "%s/count"\nexec /usr/bin/ssh "$@"\n' "$tmp" > "$tmp/wrap/ssh"; chmod +x "$tmp/wrap/ssh"
export PATH="$tmp/wrap:$PATH" EXPR_SSH_CONFIG="$tmp/ssh_config"
cat > "$tmp/repo/srv.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True: s.accept()[0].close()
PY
for where in local far; do
  cat > "$tmp/$where.kdl" <<KDL
experiment rb
host far ssh="exprbench" ssh-port=$port ip="127.0.0.1" repo="$tmp/repo"
host local repo="$tmp/repo"
bench b {
    param i 1
    serve s "python3 srv.py $srv_port" host=$where port=$srv_port
    run "true {{ i }}" host=$where
    sweep i 1 2 3 4 5 6 7 8
}
KDL
done
[ -n "${SETUP_ONLY:-}" ] && { echo "$tmp $sshd_pid"; exit 0; }
# the rc file's cost: one command over an open multiplexed connection
ssh -F "$tmp/ssh_config" -o ControlMaster=yes -o ControlPath="$tmp/cm" -o ControlPersist=60 -f -N exprbench
t0=$(date +%s%N); for i in 1 2 3 4 5; do ssh -F "$tmp/ssh_config" -o ControlPath="$tmp/cm" exprbench true; done; t1=$(date +%s%N)
rc_ms=$(( (t1 - t0) / 5000000 ))
ssh -F "$tmp/ssh_config" -o ControlPath="$tmp/cm" -O exit exprbench 2>/dev/null
# one run: prints "ms ssh-count"
run() { # BIN WHERE ONLY
  local out="$tmp/out-$RANDOM$RANDOM"; : > "$tmp/count"
  local s=$(date +%s%N)
  (cd "$tmp/repo" && "$1" run "$tmp/$2.kdl" --output "$out" $3 >/dev/null 2>"$out.err") || { echo "run failed: $(tail -3 "$out.err")" >&2; }
  local e=$(date +%s%N)
  echo "$(( (e - s) / 1000000 )) $(wc -l < "$tmp/count")"
}
best() { # BIN WHERE ONLY: best ms of ROUNDS, and its ssh count
  local b=999999999 c=0 r
  for _ in $(seq "$rounds"); do r=$(run "$@"); [ "${r% *}" -lt "$b" ] && { b=${r% *}; c=${r#* }; }; done
  echo "$b $c"
}
echo "rc file (one \`ssh host true\` over the multiplexed connection): $rc_ms ms"
echo
echo "| binary | host | whole run (8 points) | fixed | per point | ssh commands (8 points) | ssh per point |"
echo "|---|---|---|---|---|---|---|"
for bin in before after; do
  exe=$before; [ $bin = after ] && exe=$after
  for where in local far; do
    r8=$(best "$exe" $where ""); r1=$(best "$exe" $where "--only i=1")
    t8=${r8% *}; c8=${r8#* }; t1=${r1% *}; c1=${r1#* }
    pp=$(( (t8 - t1) / 7 )); fixed=$(( t1 - pp ))
    cpp=$(python3 -c "print(round(($c8 - $c1) / 7, 1))")
    echo "| $bin | $where | $t8 ms | $fixed ms | $pp ms | $c8 | $cpp |"
  done
done
