#!/usr/bin/env bash
# Installs what building and testing mayura needs, from Debian's packages.
# Installs nothing when everything is there already.
#   deps.sh        to build, run and benchmark
#   deps.sh vm     also what the test VMs need (tests/vm): QEMU and Debian
#                  12's own kernel, and what the fuzzers need
#   deps.sh fuzz   also what the fuzzers need (scripts/fuzz.sh): clang and
#                  its libFuzzer and sanitizer runtimes; and clang's
#                  static checks (scripts/format.sh, scripts/tidy.sh)
#   deps.sh bench  also the desktop benchmark's anchors (scripts/bench.sh):
#                  xdotool, ImageMagick's import and xwd
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev libnftables-dev
  libboost1.81-dev nlohmann-json3-dev libgtest-dev
  # the image store (and the tests' image archives): archives and their compression, and the digests
  libarchive-dev libssl-dev
  # a sandbox's disk: an ext4 file system made in a file (and e2fsck, which
  # the tests check it with)
  libext2fs-dev e2fsprogs
  # an XFS that clones files, which the tests make snapshots on
  xfsprogs
  # mayurad under systemd: socket activation and readiness
  libsystemd-dev
  # the Debian package: cpack's dependency scan (dpkg-shlibdeps), and the
  # man pages, made from each program's --help
  dpkg-dev help2man
  # what the tests run inside sandboxes on the host image
  python3 hostname coreutils findutils gawk
  # the shells the command backend's scripts are tested under
  dash busybox
  # the test world's HTTPS server and certificate, and the client the network tests run
  openssl curl
  # what the tests look at the host with (pgrep, flock, setpriv, prlimit)
  procps util-linux
  # the desktop: its helper (libxcb with XTEST, and libpng, linked statically),
  # key names (libxkbcommon), and the X server it is tested against
  libxcb1-dev libxcb-xtest0-dev libpng-dev libxkbcommon-dev xvfb
  # anchors for the benchmarks
  bubblewrap crun
  # the TypeScript provider (clients/typescript), its tests and the seed's
  # examples in a sandbox; its dev tools (tsc) come from npm
  nodejs
)
# A Node that carries its own npm (NodeSource's) must not get Debian's, which
# would replace it.
command -v npm >/dev/null 2>&1 || packages+=(npm)
if [ "${1:-}" = vm ] || [ "${1:-}" = fuzz ]; then
  packages+=(clang libclang-rt-dev clang-format clang-tidy)
fi
if [ "${1:-}" = bench ]; then
  packages+=(xdotool imagemagick x11-apps)
fi
if [ "${1:-}" = vm ]; then
  # the VMs of tests/vm: QEMU, Debian 12's own kernel (6.1) and its modules,
  # and what makes their initramfs and disk
  packages+=(qemu-system-x86 linux-image-amd64 kmod cpio e2fsprogs iproute2 util-linux)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    apt-get install -y -q "${missing[@]}" >/dev/null
  }
fi
