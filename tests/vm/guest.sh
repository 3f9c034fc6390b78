#!/bin/bash
# pid 1 of a test VM, on the host's root (read-only over 9p, under a tmpfs
# overlay): lays out the file systems and the cgroups of one kind of host,
# runs the job the host left in the results share, writes its exit status
# there, and powers off.
#
# Layouts (mayura.layout= on the kernel's command line):
#   v2-root       pure cgroup2 (cgroup_no_v1=all), the job in the root cgroup,
#                 as in a container or on a host without systemd
#   v2-delegated  pure cgroup2, the job in system.slice/mayurad.service, marked
#                 delegated as systemd marks a unit with Delegate=yes
#   v2-login      pure cgroup2, the job in a login session's scope
#                 (user.slice/user-0.slice/session-1.scope), not delegated
#   v1            cgroup v1 only: memory, cpu, pids and others on hierarchies
#                 of their own, no cgroup2 mounted
#   hybrid        v1 controllers and an empty cgroup2 at /sys/fs/cgroup/unified
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
layout=$(sed -n 's/.*mayura\.layout=\([^ ]*\).*/\1/p' /proc/cmdline)

off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 10
}

mkdir -p /dev/pts /dev/shm
ln -sfn /proc/self/fd /dev/fd
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
# /tmp stays the overlay's (writable, in the VM's memory): the job's own
# directory may be there, as a checkout CI made.
mount -t tmpfs -o mode=0755 run /run
mkdir -p /run/lock /mnt/results
mount -t 9p -o trans=virtio,version=9p2000.L results /mnt/results || off
exec >/mnt/results/guest.log 2>&1
echo "guest: kernel $(uname -r), layout $layout"
# the kernel's text symbols, for run.sh to name where a stalled guest's cpus are
grep -E '^[0-9a-f]+ [tT] ' /proc/kallsyms >/mnt/results/kallsyms
hostname mayura-vm
ip link set lo up

# No udev here to load the drivers of the devices QEMU gives.
modprobe -a virtio_blk ext4 loop xfs  # loop: sandboxes' disks; xfs: the snapshot tests' clones

# The image store on a real file system: tmpfs on 6.1 has no idmapped mounts.
mkfs.ext4 -q -F /dev/vda && mkdir -p /var/lib/mayura && mount -t ext4 /dev/vda /var/lib/mayura || {
  echo "guest: no ext4 disk"
  echo 125 >/mnt/results/status
  off
}

cg=/sys/fs/cgroup
v1_hierarchies() {
  mount -t tmpfs -o mode=0755 cgroup "$cg"
  for c in cpu,cpuacct memory pids freezer devices blkio cpuset; do
    mkdir -p "$cg/$c"
    mount -t cgroup -o "$c" cgroup "$cg/$c" || echo "guest: no v1 $c"
  done
}
job_cgroup=""
case "$layout" in
  v2-root | v2-delegated | v2-login)
    # as systemd mounts it
    mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 "$cg"
    echo "+cpu +memory +pids" >"$cg/cgroup.subtree_control"
    case "$layout" in
      v2-delegated)
        mkdir -p "$cg/system.slice/mayurad.service"
        echo "+cpu +memory +pids" >"$cg/system.slice/cgroup.subtree_control"
        python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.delegate", b"1")' "$cg/system.slice/mayurad.service"
        job_cgroup=$cg/system.slice/mayurad.service
        ;;
      v2-login)
        mkdir -p "$cg/user.slice/user-0.slice/session-1.scope"
        echo "+memory +pids" >"$cg/user.slice/cgroup.subtree_control"
        echo "+memory +pids" >"$cg/user.slice/user-0.slice/cgroup.subtree_control"
        job_cgroup=$cg/user.slice/user-0.slice/session-1.scope
        ;;
    esac
    ;;
  v1) v1_hierarchies ;;
  hybrid)
    v1_hierarchies
    mkdir -p "$cg/unified"
    mount -t cgroup2 -o nsdelegate cgroup2 "$cg/unified"
    ;;
  *)
    echo "guest: unknown layout '$layout'"
    echo 125 >/mnt/results/status
    off
    ;;
esac
echo "guest: /proc/self/cgroup: $(tr '\n' ' ' </proc/self/cgroup)"

# A guest whose tests stop making processes for minutes has stalled (seen
# about once in eight VM runs, with ctest's own timeout not firing: a wait no
# hung-task report names). The watchdog says so on the serial console (the
# host's console.log) with every blocked task's kernel stack, and powers the
# VM off if nothing moves for ten minutes. It uses only bash's builtins, /proc
# and /dev: the root is 9p, which may be what stalled.
stall_watchdog() {
  local con up last=0 now idle=0 nap p state stat f l args
  exec {con}>/dev/ttyS0 {nap}<> <(:)
  while :; do
    read -r -t 30 -u "$nap" _
    read -r _ _ _ _ now </proc/loadavg
    if [ "$now" != "$last" ]; then
      last=$now idle=0
      continue
    fi
    idle=$((idle + 30))
    if [ $idle = 120 ] || [ $idle = 480 ]; then
      read -r up _ </proc/uptime
      echo "guest: no new process for ${idle}s (uptime $up); blocked tasks:" >&$con
      for p in /proc/[0-9]*; do
        read -r state <"$p/stat" || continue
        stat=${state##*) } state=${stat%% *}
        [ "$state" = S ] || [ "$state" = I ] || [ "${p#/proc/}" = "$BASHPID" ] && continue
        mapfile -d '' args <"$p/cmdline"
        # numbers and one-letter states: nothing to glob (and a here-string might need a file)
        # shellcheck disable=SC2206
        f=($stat)
        echo "guest: ${p#/proc/} $state cpu ${f[11]}+${f[12]} ticks: ${args[*]:0:8}" >&$con
        while read -r l; do echo "guest:   $l" >&$con; done <"$p/stack"
      done
      echo 1 >/proc/sys/kernel/sysrq
      echo 7 >/proc/sys/kernel/printk
      echo w >/proc/sysrq-trigger
      echo l >/proc/sysrq-trigger
      echo 5 >/proc/sys/kernel/printk
    fi
    if [ $idle -ge 600 ]; then
      echo "guest: stalled: no new process for ${idle}s, powering off" >&$con
      echo o >/proc/sysrq-trigger
    fi
  done
}
# Its own output goes to the console only: guest.sh's stderr is the results
# share, 9p too, where a write may be what stalls.
stall_watchdog </dev/null >/dev/null 2>&1 &

export MAYURA_TEST_LAYOUT=$layout MAYURA_TEST_STORE_DIR=/var/lib/mayura
job_dir=$(sed -n "s/^cd '\{0,1\}\([^']*\)'\{0,1\}$/\1/p" /mnt/results/job.sh | head -1)
if [ -n "$job_dir" ] && [ ! -d "$job_dir" ]; then
  echo "guest: the job's directory $job_dir is hidden in the VM (under /run, /dev or /var/lib/mayura?)"
fi
(
  if [ -n "$job_cgroup" ]; then echo $BASHPID >"$job_cgroup/cgroup.procs"; fi
  cd /mnt/results && exec bash /mnt/results/job.sh
)
status=$?
echo "guest: the job exited $status"
echo "$status" >/mnt/results/status
off
