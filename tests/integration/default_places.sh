# The engine's default places after an example's engine has ended (sourced
# by the check_*example.sh scripts, which run the README's examples as their
# readers would: root, native_sandboxes() with no options).
#
# Other engines may live in the same places (a packaged mayurad, a
# `mayura-run --local` session): the state directory's records say whose
# each sandbox is (slots/N: "engine ID" and the sandbox's cgroup), and a live
# engine holds an flock on engines/ID. So nothing may be left there of an
# engine that is gone: every record's engine alive, every sandbox cgroup
# under the root named by such a record. With no engine alive the places
# themselves must be gone: the last engine removes them.

state_dir=/run/mayura

# engine_alive ID: its file exists and someone holds its lock. (Opened
# without creating it: flock(1) on a path would make a file that was gone.)
engine_alive() {
  local fd rc=0
  exec {fd}<"$state_dir/engines/$1" || return 1
  flock -n -E 75 "$fd" || rc=$?
  exec {fd}<&-
  [ "$rc" = 75 ]
}

# One look at the places; prints what is left of a gone engine, if anything.
left_of_gone_engines() {
  local root=$1 record engine cgroup named="" alive=0 f
  for f in "$state_dir"/engines/*; do
    [ -e "$f" ] || continue
    if engine_alive "$(basename "$f")" 2>/dev/null; then
      alive=$((alive + 1))
    else
      echo "file of an engine that is gone: $f"
    fi
  done
  if [ "$alive" = 0 ]; then
    [ ! -e "$root" ] || echo "cgroup left: $root"
    [ ! -e "$state_dir" ] || echo "state directory left: $state_dir"
    return
  fi
  for record in "$state_dir"/slots/*; do
    [ -e "$record" ] || continue
    engine=$(sed -n '1s/^engine //p' "$record" 2>/dev/null) || continue
    cgroup=$(sed -n 2p "$record" 2>/dev/null) || continue
    [ -n "$engine" ] || continue
    engine_alive "$engine" 2>/dev/null || echo "record of an engine that is gone: $record ($engine, $cgroup)"
    named="$named $cgroup "
  done
  for cgroup in "$root"/*/; do
    [ -d "$cgroup" ] || continue
    cgroup=${cgroup%/}
    [[ $named == *" $cgroup "* ]] || echo "cgroup no live engine's record names: $cgroup"
  done
}

# expect_nothing_left_in_default_places MAYURA_RUN: exits 1, saying what,
# if something is left. A neighbour's sandbox that comes or goes between the
# look at the records and the one at the cgroups can look orphaned for an
# instant, so only what is seen three times, a second apart, counts.
expect_nothing_left_in_default_places() {
  local root seen i
  # Where the cgroup root is, the engine itself says (it depends on the host's layout).
  root=$("$1" doctor | sed -n 's/^sandboxes under \([^ ]*\) .*/\1/p')
  [ -n "$root" ] || {
    echo "mayura-run doctor did not say where sandboxes' cgroups go" >&2
    exit 1
  }
  for i in 1 2 3; do
    seen=$(left_of_gone_engines "$root")
    [ -n "$seen" ] || return 0
    [ "$i" = 3 ] || sleep 1
  done
  echo "$seen" >&2
  exit 1
}
