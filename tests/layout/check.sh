#!/usr/bin/env bash
# The layout's rules, checked over the source tree and a built tree's
# compile_commands.json (a unity build's batches read as their sources):
# - no #include reaches up a directory ("../"): a library's insides are
#   reached through its target's include directories, and the tests' by
#   their path from the project's root;
# - no source is compiled into two targets: what two targets share is a
#   library or an object library, compiled once. Two programs are let off,
#   by design: the in-sandbox init (mayura_init), static and exception-free,
#   compiles the few base, engine and rootfs sources it carries with its own
#   flags; and the seccomp profiles' build-time compiler (mayura_seccomp_gen),
#   never sanitized, compiles the profiles the library carries;
# - no thread is detached, and none is started outside the runtime
#   (mayura/runtime.hpp): the library's and the programs' threads are the
#   runtime's or OwnedThreads, each joined by a named owner. The tests may
#   start threads of their own, but detach none.
#   tests/layout/check.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)
status=0

if up=$(cd "$root" && git ls-files '*.c' '*.cpp' '*.h' '*.hpp' | xargs grep -n '#include "\.\./'); then
  echo "check.sh: an #include reaches up a directory:" >&2
  echo "$up" >&2
  status=1
fi

detached=$(cd "$root" && git grep -nE '(\.|->)detach\(\)' -- '*.cpp' '*.cc' '*.hpp' '*.h' || true)
if [[ -n $detached ]]; then
  echo "check.sh: a thread is detached (own it: an OwnedThread, or the runtime's threads):" >&2
  echo "$detached" >&2
  status=1
fi
bare=$(cd "$root" && git grep -nE 'std::j?thread([^:]|$)|std::async\(|pthread_create\(' -- '*.cpp' '*.cc' '*.hpp' '*.h' \
  ':!tests/' ':!sandbox/runtime.cpp' ':!sandbox/include/mayura/runtime.hpp' || true)
if [[ -n $bare ]]; then
  echo "check.sh: a thread started outside the runtime (use an OwnedThread, or the runtime's threads):" >&2
  echo "$bare" >&2
  status=1
fi

python3 - "$root/scripts" "$build" <<'PY' || status=1
import collections, re, sys
sys.path.insert(0, sys.argv[1])
import compile_db

let_off = {"mayura_init", "mayura_seccomp_gen"}
targets = collections.defaultdict(set)
for entry in compile_db.entries(sys.argv[2]):
    out = re.search(r"-o (\S+)", entry["command"]).group(1)
    target = re.search(r"CMakeFiles/([^/]+)\.dir/", out).group(1)
    targets[entry["file"]].add(target)
twice = {f: t for f, t in targets.items() if len(t - let_off) > 1}
for f, t in sorted(twice.items()):
    print(f"check.sh: {f} is compiled into {', '.join(sorted(t))}: make it a library they link", file=sys.stderr)
sys.exit(1 if twice else 0)
PY

((status == 0)) && echo "check.sh: the layout is in order"
exit "$status"
