#!/usr/bin/env bash
# The benchmarks, as root: sandboxes side by side with the anchors (bubblewrap,
# crun; mayura-run locally and through a warm mayurad), an exec through the
# command backend beside a native one, mayurad with 1, 100 and 500 execs at
# once (threads, memory, latency), two tenants' cycles beside a hostile
# one and alone, mayurad's restart with 1000 sandboxes to take back and 100
# SIGKILLs under load, pause and resume of a sandbox of 100 processes beside a
# cgroup frozen by hand, a keystroke's echo through mayura-run -it beside
# script and a bare pty, an attach to a background command's last 1 MiB, a workdir on a disk beside one on a tmpfs (create,
# and a write beside the host's), a snapshot of a 1 GiB workspace beside
# cp -a and tar, a create from it and a fork into 20 beside plain creates
# (on the host's file system, then on XFS, which clones files), a round trip through mayurad from C++ and from Node (the TypeScript
# provider), importing
# and first running a 100 MiB image beside GNU tar and bubblewrap, the costs
# as idle sandboxes pile up (1 to DENSITY alive) and churn, the desktop
# beside xdotool and ImageMagick's import on the same display, then the
# networks' costs in a private world.
#   ./scripts/bench.sh [ITERATIONS] [DOWNLOAD-MIB] [DENSITY]
set -euo pipefail
. "$(dirname "$0")/as_root.sh"
trap 'echo "bench.sh: stopped: \"$BASH_COMMAND\" failed (exit $?, line $LINENO)" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
"$here/deps.sh" bench
log=$(mktemp)
"$here/build.sh" "$here/../build" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 || {
  tail -40 "$log" >&2
  echo "bench.sh: the Release build failed (above)" >&2
  exit 1
}
rm -f "$log"
"$here/../build/bench/bench_sandbox" "${1:-200}" "$here/../build/tools/mayura-run"
echo
"$here/../build/bench/bench_command_backend" "${1:-200}"
echo
"$here/../build/bench/bench_service" 2 "$here/../build/tools/mayurad"
echo
"$here/../build/bench/bench_tenants" "${1:-200}" "$here/../build/tools/mayurad"
echo
"$here/../build/bench/bench_restore" 1000 "$here/../build/tools/mayurad" 100
echo
"$here/../build/bench/bench_pause" "${1:-200}"
echo
"$here/../build/bench/bench_sessions" "${1:-200}" "$here/../build/tools/mayura-run" "$here/../build/tools/mayurad"
echo
"$here/../build/bench/bench_disk" "${1:-200}"
echo
"$here/../build/bench/bench_snapshot" "${1:-200}"
echo
# The same on XFS, which clones a file's blocks (FICLONE) where ext4 copies
# them: the engine's disks and snapshots on a file system an operator may
# choose for /var/lib/mayura, made here in a sparse file of 20 GiB.
xfs=$(mktemp -d /var/tmp/mayura-bench-xfs.XXXXXX)
trap 'umount "$xfs/mnt" 2>/dev/null || true; rm -rf "$xfs"' EXIT
truncate -s 20G "$xfs/image"
mkfs.xfs -q -m reflink=1 "$xfs/image"
mkdir "$xfs/mnt"
mount -o loop "$xfs/image" "$xfs/mnt"
echo "bench_snapshot on XFS (reflink=1, a loop device over a file on $(findmnt -n -o FSTYPE -T /var/tmp))"
"$here/../build/bench/bench_snapshot" "${1:-200}" "$xfs/mnt"
umount "$xfs/mnt"
rm -rf "$xfs"
trap - EXIT
echo
# The TypeScript provider, built, for its round trip beside C++'s.
(cd "$here/../clients/typescript" && npm ci --no-audit --no-fund --silent && npm run --silent build)
"$here/../build/bench/bench_clients" "$here/../build/tools/mayurad" "$here/../clients/typescript/bench/roundtrip.mjs" "${1:-200}"
echo
"$here/../build/bench/bench_images" 100 20 "$here/../build/tools/mayura-run"
echo
"$here/../build/bench/bench_desktop" "${1:-200}"
echo
# 10000 alive takes minutes and most of a 24 GiB machine's memory: 1000 unless asked.
"$here/../build/bench/bench_density" "${3:-1000}" 10000 4
echo
exec "$here/../build/bench/bench_network" "${2:-1024}" 1000
