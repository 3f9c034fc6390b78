# What the package tests share (sourced by deb_test.sh and
# activation_test.sh): a mayurad config whose places no other engine uses,
# the API round trip through curl, and the check that a stopped mayurad left
# nothing. Everything fails loudly; nothing is skipped.

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || fail "the package tests run mayurad, which needs root"
for tool in curl python3 ps; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done

# write_config FILE NAME ID_BASE [SOCKET [SOCKET_MODE]]: a config of an engine
# of its own: state directory, cgroup root (at the top of the cgroup2
# hierarchy, which root may always use), host id range, image places, and no
# sandbox made ahead; sandboxes released as it stops unless LIVE_RESTORE=1.
# Sets CG_NAME, STATE_DIR, ID_BASE, ID_SLOTS.
write_config() {
  local file=$1 name=$2 mount
  mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
  # (a host with no cgroup2 mounted gets the engine's own hierarchy there)
  [ -n "$mount" ] || mount=/run/mayura-cgroup2
  CG_NAME=$name
  STATE_DIR=/run/$name
  ID_BASE=$3
  ID_SLOTS=4
  python3 - "$file" "$mount/$name" "$STATE_DIR" "$ID_BASE" "$ID_SLOTS" "${4:-}" "${5:-}" "${LIVE_RESTORE:-0}" <<'PY'
import json, sys
file, cgroup, state, base, slots, sock, mode, live = sys.argv[1:]
config = {"cgroupRoot": cgroup, "stateDir": state, "idBase": int(base), "idSlots": int(slots), "prepared": 0, "preparedDisks": 0,
          "imageDir": state + "-images", "imageStore": state + "-store", "liveRestore": live == "1"}
if sock: config["socket"] = sock
if mode: config["socketMode"] = mode
with open(file, "w") as f: json.dump(config, f)
PY
}

# wait_until_serving PID SOCKET: until /v1/health answers (the daemon alive).
wait_until_serving() {
  local i
  for i in $(seq 200); do
    kill -0 "$1" 2>/dev/null || fail "mayurad (pid $1) ended before it served $2"
    curl -sf --unix-socket "$2" http://mayurad/v1/health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "mayurad served nothing on $2 within 20 s"
}

# answer METHOD SOCKET PATH [BODY]: sets STATUS and BODY of one request.
answer() {
  local out data=()
  [ $# -lt 4 ] || data=(--data-binary "$4")
  out=$(curl -s --unix-socket "$2" -X "$1" "${data[@]}" -w '\n%{http_code}' "http://mayurad$3") ||
    fail "curl $1 $3 on $2 failed"
  STATUS=${out##*$'\n'}
  BODY=${out%$'\n'*}
}

# round_trip SOCKET: create a sandbox, run `echo hi` in it, release it.
round_trip() {
  local sock=$1 id
  answer POST "$sock" /v1/sandboxes '{"lifetimeMs": 60000}'
  [ "$STATUS" = 201 ] || fail "create answered $STATUS: $BODY"
  id=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$BODY") || fail "no id in $BODY"
  answer POST "$sock" "/v1/sandboxes/$id/exec" '{"argv": ["echo", "hi"]}'
  [ "$STATUS" = 200 ] || fail "exec answered $STATUS: $BODY"
  # the NDJSON stream: the output, then the result
  python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().strip().splitlines()]
out = "".join(l["data"] for l in lines[:-1] if l.get("stream") == "stdout")
assert lines[-1].get("exitCode") == 0 and out == "hi\n", lines
' <<<"$BODY" || fail "exec's result is not exit 0 with stdout hi: $BODY"
  answer DELETE "$sock" "/v1/sandboxes/$id"
  [ "$STATUS" = 204 ] || fail "release answered $STATUS: $BODY"
  echo "round trip through $sock: create, exec echo hi, release"
}

# stop_daemon PID: SIGTERM, and it must end with status 0.
stop_daemon() {
  local rc=0
  kill -TERM "$1"
  wait "$1" || rc=$?
  [ "$rc" = 0 ] || fail "mayurad ended with status $rc on SIGTERM"
}

# end_daemon PID: a test that failed with mayurad running stops it all the
# same (SIGTERM, then SIGKILL after 20 s).
end_daemon() {
  local i
  kill -TERM "$1" 2>/dev/null || return 0
  for i in $(seq 200); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
}

# expect_nothing_left: no process in the id range, no cgroup of the engine's
# root (cgroup2 or v1), no state directory.
expect_nothing_left() {
  local i left hi=$((ID_BASE + ID_SLOTS * 65536))
  for i in $(seq 50); do
    left=$(ps -e -o ruid=,pid=,comm= | awk -v lo="$ID_BASE" -v hi="$hi" '$1 >= lo && $1 < hi')
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] || fail "processes of the sandboxes' ids are left: $left"
  left=$(find /sys/fs/cgroup /run/mayura-cgroup2 -maxdepth 2 -name "$CG_NAME" 2>/dev/null || true)
  [ -z "$left" ] || fail "cgroups are left: $left"
  [ ! -e "$STATE_DIR" ] || fail "the state directory $STATE_DIR is left"
}
