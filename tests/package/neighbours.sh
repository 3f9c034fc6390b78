#!/usr/bin/env bash
# Runs a command (the host tests) beside what a developer who installed the
# package has running: the packaged mayurad (from the .deb this build makes)
# serving the default socket with its packaged config, so in the engine's
# default places, one sandbox of it running a command, and a `mayura-run
# --local` session in those same places. The tests must own their places:
# when the command ends, both neighbours and their commands must still run,
# untouched; then they are stopped and must leave nothing. The command's exit
# status is the script's.
#   neighbours.sh BUILD_DIR COMMAND...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/../integration/default_places.sh"
build=$(cd "${1:?usage: neighbours.sh BUILD_DIR COMMAND...}" && pwd)
shift
[ $# -gt 0 ] || fail "usage: neighbours.sh BUILD_DIR COMMAND..."
run=$build/tools/mayura-run
socket=/run/mayura/mayurad.sock
for tool in cpack dpkg-deb pgrep flock; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done
# (a socket a killed daemon left is no daemon: the packaged one replaces it)
! curl -s --max-time 5 --unix-socket "$socket" http://mayurad/v1/health >/dev/null 2>&1 ||
  fail "a mayurad serves $socket already: this run needs the default places to start its own"

scratch=$(mktemp -d /tmp/mayura-neighbours-XXXXXX)
daemon= session= tenant=
cleanup() {
  [ -z "$tenant" ] || kill -TERM "$tenant" 2>/dev/null || true
  [ -z "$session" ] || kill -TERM "$session" 2>/dev/null || true
  [ -z "$daemon" ] || end_daemon "$daemon"
  wait 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

echo "== neighbours: the packaged mayurad on $socket, and a mayura-run --local session"
(cd "$build" && cpack -G DEB -B "$scratch/out") >"$scratch/cpack.log" 2>&1 || {
  cat "$scratch/cpack.log" >&2
  fail "cpack -G DEB failed"
}
dpkg-deb -x "$scratch"/out/*.deb "$scratch/root"
packaged=$scratch/root/usr/bin/mayurad
"$packaged" --config "$scratch/root/etc/mayura/mayurad.json" 2>"$scratch/mayurad.log" &
daemon=$!
wait_until_serving "$daemon" "$socket"
# One of the daemon's sandboxes, through the default socket as a user runs it,
# and one of an engine in mayura-run's own process.
"$run" -- sleep 86398 </dev/null >"$scratch/tenant.log" 2>&1 &
tenant=$!
"$run" --local -- sleep 86399 </dev/null >"$scratch/session.log" 2>&1 &
session=$!
# running: "sleep NAME" processes of theirs, in a sandbox each
running() { pgrep -x -f "sleep $1" >/dev/null; }
for _ in $(seq 300); do
  running 86398 && running 86399 && break
  kill -0 "$tenant" && kill -0 "$session" || break
  sleep 0.1
done
running 86398 || fail "the daemon's sandbox did not start its command: $(cat "$scratch/tenant.log")"
running 86399 || fail "the local session did not start its command: $(cat "$scratch/session.log")"
echo "neighbours running: mayurad $daemon (its sandbox's client $tenant), mayura-run --local $session"

rc=0
"$@" || rc=$?

echo "== neighbours after the command"
for what in "mayurad:$daemon" "its sandbox's client:$tenant" "the local session:$session"; do
  kill -0 "${what##*:}" 2>/dev/null || fail "${what%:*} (pid ${what##*:}) ended while the command ran"
done
running 86398 || fail "the daemon's sandbox lost its command while the command ran"
running 86399 || fail "the local session's sandbox lost its command while the command ran"
curl -sf --unix-socket "$socket" http://mayurad/v1/health >/dev/null || fail "mayurad no longer serves $socket"
# A stopped client stops its command and releases its sandbox; SIGTERM
# releases everything.
for pid in "$tenant" "$session"; do kill -TERM "$pid"; done
wait "$tenant" "$session" 2>/dev/null || true
tenant= session=
stop_daemon "$daemon"
daemon=
expect_nothing_left_in_default_places "$run"
[ ! -e "$socket" ] || fail "mayurad left its socket $socket"
echo "neighbours stopped, nothing left in the default places"
exit "$rc"
