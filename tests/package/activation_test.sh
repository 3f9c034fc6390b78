#!/usr/bin/env bash
# mayurad started as systemd starts it from mayurad.socket (activate.py plays
# systemd): it serves the socket it was passed, tells systemd when it is
# ready and when it stops, and never removes, replaces or re-moded that
# socket, whose file stays systemd's after mayurad is gone.
#   activation_test.sh MAYURAD
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
mayurad=${1:?usage: activation_test.sh MAYURAD}

scratch=$(mktemp -d /tmp/mayura-activation-XXXXXX)
pid=
cleanup() {
  [ -z "$pid" ] || end_daemon "$pid"
  rm -rf "$scratch"
}
trap cleanup EXIT

sock=$scratch/mayurad.sock
# The config names another socket, with another mode: neither may be used.
write_config "$scratch/mayurad.json" "mayura-activation-$$" $((0x30100000)) "$scratch/config.sock" 0600
python3 "$here/activate.py" "$sock" "$scratch/notify.log" "$mayurad" --config "$scratch/mayurad.json" \
  2>"$scratch/mayurad.log" &
pid=$!
wait_until_serving "$pid" "$sock"
inode=$(stat -c %i "$sock")
[ "$(stat -c %a "$sock")" = 660 ] || fail "the passed socket's mode changed to $(stat -c %a "$sock")"
[ ! -e "$scratch/config.sock" ] || fail "mayurad made the config's socket though systemd passed one"
grep -q 'the socket systemd passed' "$scratch/mayurad.log" || fail "mayurad does not say it serves the passed socket: $(cat "$scratch/mayurad.log")"
grep -qx 'READY=1' "$scratch/notify.log" || fail "mayurad never told systemd READY=1: $(cat "$scratch/notify.log")"

round_trip "$sock"
answer GET "$sock" /v1/sandboxes
[ "$STATUS" = 200 ] || fail "list answered $STATUS: $BODY"

stop_daemon "$pid"
pid=
grep -qx 'STOPPING=1' "$scratch/notify.log" || fail "mayurad never told systemd STOPPING=1: $(cat "$scratch/notify.log")"
[ -S "$sock" ] || fail "mayurad removed the socket systemd owns"
[ "$(stat -c %i "$sock")" = "$inode" ] || fail "mayurad replaced the socket systemd owns"
[ "$(stat -c %a "$sock")" = 660 ] || fail "mayurad changed the mode of the socket systemd owns"
expect_nothing_left

# A passed fd that is no listening Unix stream socket (here an unbound one)
# stops mayurad at start, saying so; nothing is served.
rc=0
python3 - "$mayurad" "$scratch/mayurad.json" 2>"$scratch/refused.log" <<'PY' || rc=$?
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execve(sys.argv[1], [sys.argv[1], "--config", sys.argv[2]], env)
PY
[ "$rc" = 1 ] || fail "mayurad given an unbound socket ended with $rc: $(cat "$scratch/refused.log")"
grep -q 'no listening Unix stream socket' "$scratch/refused.log" || fail "mayurad did not say what is wrong: $(cat "$scratch/refused.log")"
[ ! -e "$scratch/config.sock" ] || fail "mayurad made the config's socket though systemd passed one"
echo "PASS: socket activation"
