#!/usr/bin/env bash
# The Debian package, built and used as an operator would: cpack -G DEB;
# its metadata (dependencies, conffile, maintainer scripts) and contents;
# the maintainer scripts run against stand-ins for groupadd and systemctl;
# then the package unpacked into a scratch root, and the mayurad found there
# checks its default config, serves a scratch socket, runs a command in a
# sandbox and leaves nothing on SIGTERM; with liveRestore, a restart (the
# SIGTERM systemctl restart sends, then a start) keeps a sandbox and its
# running process, and --release-all then leaves nothing.
#   deb_test.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=$(cd "${1:?usage: deb_test.sh BUILD_DIR}" && pwd)
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs dpkg-dev)"
done

scratch=$(mktemp -d /tmp/mayura-deb-XXXXXX)
pid=
cleanup() {
  [ -z "$pid" ] || end_daemon "$pid"
  rm -rf "$scratch"
}
trap cleanup EXIT

echo "== cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$scratch/out") >"$scratch/cpack.log" 2>&1 || {
  cat "$scratch/cpack.log" >&2
  fail "cpack -G DEB failed"
}
debs=("$scratch"/out/*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || fail "cpack made no single .deb: ${debs[*]}"
deb=${debs[0]}

echo "== metadata"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = mayura ] || fail "the package is named '$(field Package)'"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "the architecture is '$(field Architecture)'"
depends=$(field Depends)
# (the names alone, one a line, without their versions)
sed 's/ *([^)]*)//g; s/, */\n/g' <<<"$depends" >"$scratch/depends"
for dep in libc6 libstdc++6 libsystemd0 libssl3 libseccomp2 libnftables1 libarchive13 passwd; do
  grep -qxF "$dep" "$scratch/depends" || fail "Depends lacks $dep: $depends"
done
[ "$(field Recommends)" = xvfb ] || fail "the package does not recommend xvfb (the desktop): '$(field Recommends)'"
dpkg-deb -e "$deb" "$scratch/control"
grep -qx /etc/mayura/mayurad.json "$scratch/control/conffiles" || fail "/etc/mayura/mayurad.json is no conffile"
for script in postinst prerm postrm; do
  [ -x "$scratch/control/$script" ] || fail "the package has no executable $script"
  sh -n "$scratch/control/$script" || fail "$script is no valid sh"
done
grep -q 'groupadd --system mayura' "$scratch/control/postinst" || fail "postinst does not make the group mayura"

echo "== maintainer scripts, against stand-ins"
# groupadd and systemctl only log; getent says what the test wants.
shims=$scratch/shims
mkdir "$shims"
for tool in groupadd systemctl mayurad; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$tool" "$scratch/calls" >"$shims/$tool"
done
printf '#!/bin/sh\n[ "$1 $2" = "group mayura" ] && [ -e "%s" ]\n' "$scratch/group-exists" >"$shims/getent"
chmod 755 "$shims"/*
run_script() { PATH="$shims:$PATH" sh -e "$scratch/control/$1" "${@:2}" || fail "$1 $* failed"; }
: >"$scratch/calls"
run_script postinst configure ""
grep -qx 'groupadd --system mayura' "$scratch/calls" || fail "postinst configure did not add the group: $(cat "$scratch/calls")"
if [ -d /run/systemd/system ]; then
  grep -q 'systemctl enable --now mayurad.socket' "$scratch/calls" || fail "postinst did not enable the socket under systemd"
else
  ! grep -q systemctl "$scratch/calls" || fail "postinst called systemctl where systemd does not run: $(cat "$scratch/calls")"
fi
touch "$scratch/group-exists"
: >"$scratch/calls"
run_script postinst configure 0.0.9
! grep -q groupadd "$scratch/calls" || fail "postinst added the group mayura again"
run_script prerm upgrade 0.1.0
: >"$scratch/calls"
run_script prerm remove
grep -qx 'mayurad --release-all' "$scratch/calls" || fail "prerm remove did not release the sandboxes: $(cat "$scratch/calls")"
run_script postrm remove
run_script postrm purge

echo "== contents"
dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' >"$scratch/contents"
for path in /usr/bin/mayurad /usr/bin/mayura-run /usr/libexec/mayura/mayura-run-local /usr/lib/systemd/system/mayurad.service \
  /usr/lib/systemd/system/mayurad.socket /etc/mayura/mayurad.json /usr/include/mayura/remote.hpp \
  /usr/include/mayura/service/server.hpp /usr/include/mayura/native.hpp /usr/share/doc/mayura/README.md \
  /usr/share/doc/mayura/docs/operations.md /usr/share/doc/mayura/docs/security.md \
  /usr/share/man/man1/mayura-run.1.gz /usr/share/man/man8/mayurad.8.gz; do
  grep -qx "$path" "$scratch/contents" || fail "the package lacks $path"
done
grep -Eq '^/usr/lib/([^/]+/)?libmayura-service\.a$' "$scratch/contents" || fail "the package lacks the service library"
grep -Eq '^/usr/lib/([^/]+/)?cmake/mayura/mayuraConfig\.cmake$' "$scratch/contents" || fail "the package lacks the CMake package"
dpkg-deb -c "$deb" | grep -E ' \./usr/bin/mayurad$' | grep -q '^-rwxr-xr-x root/root' || fail "mayurad is not root's, mode 0755"

echo "== unpacked into a scratch root"
root=$scratch/root
dpkg-deb -x "$deb" "$root"
# the man pages are the programs' own usage text (roff escapes each hyphen)
zcat "$root/usr/share/man/man8/mayurad.8.gz" | grep -qF '\-\-check\-config' || fail "mayurad's man page lacks --check-config"
zcat "$root/usr/share/man/man1/mayura-run.1.gz" | grep -qF '\-\-copy\-out' || fail "mayura-run's man page lacks --copy-out"
units=$root/usr/lib/systemd/system
grep -qx 'ExecStart=/usr/bin/mayurad' "$units/mayurad.service" || fail "the service does not start /usr/bin/mayurad"
for line in Type=notify KillMode=process; do
  grep -qx "$line" "$units/mayurad.service" || fail "the service lacks $line"
done
# sandboxes outlive the service's processes: their cgroups are not its own
! grep -q '^Delegate=' "$units/mayurad.service" || fail "the service delegates its cgroup: a restart would fail there"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["liveRestore"] is True' "$root/etc/mayura/mayurad.json" ||
  fail "the packaged config does not keep sandboxes across restarts"
for line in ListenStream=/run/mayura/mayurad.sock SocketMode=0660 SocketGroup=mayura; do
  grep -qx "$line" "$units/mayurad.socket" || fail "the socket lacks $line"
done
"$root/usr/bin/mayurad" --check-config --config "$root/etc/mayura/mayurad.json" | grep -q 'the settings are good' ||
  fail "the packaged mayurad refuses the packaged config"
"$root/usr/bin/mayura-run" --version | grep -q "^mayura-run $(field Version | sed 's/-.*//')" || fail "the packaged mayura-run does not run"

echo "== the packaged mayurad on a scratch socket"
sock=$scratch/mayurad.sock
write_config "$scratch/mayurad.json" "mayura-deb-$$" $((0x30000000))
"$root/usr/bin/mayurad" --config "$scratch/mayurad.json" --socket "$sock" 2>"$scratch/mayurad.log" &
pid=$!
wait_until_serving "$pid" "$sock"
round_trip "$sock"
stop_daemon "$pid"
pid=
[ ! -e "$sock" ] || fail "mayurad left its socket $sock"
expect_nothing_left

echo "== a restart keeps a sandbox (liveRestore)"
LIVE_RESTORE=1 write_config "$scratch/live.json" "mayura-deb-live-$$" $((0x30000000))
start_live() {
  "$root/usr/bin/mayurad" --config "$scratch/live.json" --socket "$sock" 2>>"$scratch/mayurad.log" &
  pid=$!
  wait_until_serving "$pid" "$sock"
}
start_live
answer POST "$sock" /v1/sandboxes '{"lifetimeMs": 120000}'
[ "$STATUS" = 201 ] || fail "create answered $STATUS: $BODY"
id=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$BODY")
answer POST "$sock" "/v1/sandboxes/$id/exec" '{"argv": ["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > /tmp/pid"]}'
[ "$STATUS" = 200 ] || fail "exec answered $STATUS: $BODY"
answer GET "$sock" "/v1/sandboxes/$id/files?path=/tmp/pid"
before=$BODY
# systemctl restart: SIGTERM to mayurad alone (KillMode=process), then a start
stop_daemon "$pid"
start_live
answer GET "$sock" "/v1/sandboxes/$id/files?path=/tmp/pid"
[ "$STATUS" = 200 ] && [ "$BODY" = "$before" ] || fail "the sandbox did not outlive the restart: $STATUS $BODY"
answer POST "$sock" "/v1/sandboxes/$id/exec" '{"argv": ["sh", "-c", "kill -0 $(cat /tmp/pid)"]}'
grep -q '"exitCode":0' <<<"$BODY" || fail "the sandbox's process did not outlive the restart: $BODY"
echo "restart: sandbox $id and its process kept"
stop_daemon "$pid"
pid=
"$root/usr/bin/mayurad" --config "$scratch/live.json" --release-all 2>&1 | grep -q 'released 1 sandbox' ||
  fail "--release-all did not release the sandbox left running"
expect_nothing_left
echo "PASS: the Debian package ($(basename "$deb"))"
