#!/usr/bin/env bash
# Builds the test VMs' initramfs: BusyBox, the modules that reach the host's
# root over virtio 9p and lay an overlay on it, and the init that mounts them
# and hands over to the guest script (tests/vm/guest.sh).
#   make-initramfs.sh KERNEL_VERSION OUT
set -euo pipefail
kver=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work"/{bin,dev,proc,sys,lower,upper,newroot,modules}
# BusyBox and what it loads (the dynamic build the tests use as an image too)
cp /bin/busybox "$work/bin/busybox"
for lib in $(ldd /bin/busybox | grep -o '/[^ ]*'); do
  mkdir -p "$work$(dirname "$lib")"
  cp -L "$lib" "$work$lib"
done
# The modules, in the order modprobe would load them (Debian's generic
# kernel builds virtio, 9p and overlayfs as modules)
: >"$work/modules.order"
n=0
while read -r verb path _; do
  [ "$verb" = insmod ] || continue
  n=$((n + 1))
  name=$(printf '%02d-%s' "$n" "$(basename "$path")")
  case "$path" in
    *.xz) xz -dc "$path" >"$work/modules/${name%.xz}"; name=${name%.xz} ;;
    *.zst) zstd -qdc "$path" >"$work/modules/${name%.zst}"; name=${name%.zst} ;;
    *) cp "$path" "$work/modules/$name" ;;
  esac
  echo "/modules/$name" >>"$work/modules.order"
done < <(for m in virtio_pci 9pnet_virtio 9p overlay; do modprobe -S "$kver" --show-depends "$m"; done | awk '!seen[$2]++')
install -m 0755 "$here/initramfs-init" "$work/init"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
