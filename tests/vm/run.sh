#!/usr/bin/env bash
# Runs a job in a VM of Debian 12's own kernel, booted under QEMU (TCG: this
# kind of machine's /dev/kvm cannot run a standard guest) on this host's root
# shared read-only over virtio 9p, with a fresh ext4 disk and the cgroups laid
# out as one kind of host has them (tests/vm/guest.sh lists the layouts).
#   run.sh LAYOUT OUTDIR COMMAND...
# COMMAND runs as root in the VM, in OUTDIR (the VM's only writable share;
# its log is OUTDIR/job.log); run.sh exits with its status. Needs
# qemu-system-x86 and linux-image-amd64 (scripts/deps.sh --vm installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
layout=$1
out=$2
shift 2
[ $# -gt 0 ] || { echo "usage: run.sh LAYOUT OUTDIR COMMAND..." >&2; exit 2; }

# The newest installed Debian 6.1 kernel (Debian 12's own)
kernel=$(ls /boot/vmlinuz-6.1.*-amd64 2>/dev/null | sort -V | tail -1 || true)
[ -n "$kernel" ] || { echo "run.sh: no Debian 6.1 kernel in /boot (apt-get install linux-image-amd64)" >&2; exit 125; }
kver=${kernel#/boot/vmlinuz-}
[ -d "/lib/modules/$kver" ] || { echo "run.sh: no modules for $kver" >&2; exit 125; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/status" "$out/guest.log" "$out/job.log" "$out/disk.img"
initrd=$out/../initrd-$kver.gz
if [ ! -s "$initrd" ] || [ "$initrd" -ot "$here/initramfs-init" ] || [ "$initrd" -ot "$here/make-initramfs.sh" ]; then
  "$here/make-initramfs.sh" "$kver" "$initrd"
fi
{
  echo 'exec >/mnt/results/job.log 2>&1'
  printf 'cd %q\n' "$PWD"
  printf '%q ' "$@"
  echo
} >"$out/job.sh"
truncate -s 8G "$out/disk.img"

cgroup_args=""
case "$layout" in v2-*) cgroup_args="cgroup_no_v1=all" ;; esac
timeout_s=${MAYURA_VM_TIMEOUT:-3000}
# A guest kernel that locks up (seen once under the emulated cpu, a cpu stuck
# in the kernel for half an hour) panics after a minute stuck, with its
# backtrace on the console, and the VM ends then instead of at the timeout.
# A guest that goes silent (no test output and nothing on its console) for
# MAYURA_VM_QUIET seconds has stalled: ctest's own timeout (600 s) would have
# printed by then, and guest.sh's watchdog speaks within minutes of the
# guest's processes stopping. What is left is a guest whose cpus do not come
# back to it; where they are is sampled through QEMU's monitor (vcpus.py)
# before the VM is ended (and left in OUTDIR/vcpus.log).
quiet_limit=${MAYURA_VM_QUIET:-600}
monitor=$out/monitor.sock
rm -f "$monitor" "$out/kallsyms" "$out/stalled" "$out/vcpus.log"
set +e
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -m "${MAYURA_VM_MEMORY:-6144}" -smp "$(nproc)" \
  -nographic -no-reboot -nic none -serial "file:$out/console.log" -monitor "unix:$monitor,server=on,wait=off" \
  -kernel "$kernel" -initrd "$initrd" \
  -append "console=ttyS0 panic=-1 softlockup_panic=1 watchdog_thresh=30 quiet loglevel=5 $cgroup_args mayura.layout=$layout mayura.guest=$here/guest.sh" \
  -fsdev "local,id=root,path=/,security_model=passthrough,readonly=on,multidevs=remap" \
  -device virtio-9p-pci,fsdev=root,mount_tag=rootfs \
  -fsdev "local,id=results,path=$out,security_model=passthrough" \
  -device virtio-9p-pci,fsdev=results,mount_tag=results \
  -drive "file=$out/disk.img,format=raw,if=virtio,cache=unsafe" </dev/null &
vm=$!
last="" quiet=0
while kill -0 "$vm" 2>/dev/null; do
  sleep 10
  now=$(stat -c %s "$out/job.log" "$out/console.log" 2>/dev/null | tr '\n' ' ')
  if [ "$now" != "$last" ]; then
    last=$now quiet=0
    continue
  fi
  quiet=$((quiet + 10))
  if [ "$quiet" -ge "$quiet_limit" ]; then
    echo "run.sh: the VM ($layout) stalled: silent for ${quiet}s; where its cpus are:" >&2
    # (kept in vcpus.log too: matrix.sh names the place in its summary)
    python3 "$here/vcpus.py" "$monitor" "$out/kallsyms" 2>&1 | tee "$out/vcpus.log" >&2 || true
    touch "$out/stalled"
    kill "$vm"
    break
  fi
done
wait "$vm"
qemu=$?
set -e
rm -f "$out/disk.img"
if [ ! -s "$out/status" ]; then
  echo "run.sh: the VM ($layout) ended without a status (qemu exit $qemu); its console:" >&2
  tail -40 "$out/console.log" >&2 || true
  tail -20 "$out/guest.log" >&2 || true
  exit 125
fi
exit "$(cat "$out/status")"
