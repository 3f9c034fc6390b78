#!/usr/bin/env bash
# Debian 12's own Node 18 (its `nodejs` package, the oldest Node the
# provider supports), for running the compiled tests on it beside the
# machine's Node, which stays installed: the two `nodejs` packages cannot
# be installed together, so Debian's is fetched with apt-get download and
# unpacked into DIR (once; a later call finds it there):
#   node18.sh DIR      then: LD_LIBRARY_PATH=$(cat DIR/libdir) DIR/usr/bin/node ...
# Its shared libraries that the machine lacks (libnode, and any of libnode's
# it has not) are unpacked beside it. Debian's Node also reads a few
# JavaScript packages at start (acorn, cjs-module-lexer, undici) from
# /usr/share/nodejs, a path built into it: those are installed with apt-get
# (architecture all, with no binary of their own, and they leave the
# machine's Node as it was). Run as root.
set -euo pipefail
dir=${1:?usage: node18.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# The plain dependencies of a package (at a version): no alternatives, no
# virtual packages.
depends() {
  apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances "$1" 2>/dev/null |
    sed -n 's/^  Depends: \([a-z0-9][a-z0-9.+-]*\)$/\1/p'
}

# The JavaScript packages it reads, installed when they are not (the list
# is kept in DIR: a machine that lost them gets them again).
install_js() {
  local missing=()
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "node18: installing ${missing[*]} (Debian's Node 18 reads them from /usr/share/nodejs)" >&2
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
      apt-get update -q >/dev/null
      apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    }
  fi
}

# Runs: the cache is whole (and what it needs is installed).
works() {
  [ -x "$dir/usr/bin/node" ] && [ -f "$dir/libdir" ] && [ -f "$dir/js-packages" ] || return 1
  # shellcheck disable=SC2046
  install_js $(cat "$dir/js-packages")
  LD_LIBRARY_PATH=$(cat "$dir/libdir") "$dir/usr/bin/node" -e 'process.exit(process.versions.node.startsWith("18.") ? 0 : 1)' 2>/dev/null
}

exec 9>"$dir.lock"
flock 9
works && exit 0

# Debian's newest Node 18: apt's lists may not have it yet on a fresh machine.
# (madison lists the newest first; awk reads to the end, so apt-cache never
# writes to a closed pipe)
newest18() { apt-cache madison nodejs 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2)} $2 ~ /^18\./ && !v {v = $2} END {print v}'; }
version=$(newest18)
if [ -z "$version" ]; then
  apt-get update -q >/dev/null
  version=$(newest18)
fi
[ -n "$version" ] || { echo "node18: apt knows no nodejs 18 (Debian 12's); is this Debian 12?" >&2; exit 1; }

# nodejs and, through the dependencies, every binary package the machine
# lacks; the architecture-all ones (node-*) are installed instead. (apt-cache
# takes a second a call here: one a package for its dependencies, one for
# the architectures of those not installed.)
download=("nodejs=$version")
js=()
queue=("nodejs=$version")
declare -A seen=([nodejs]=1)
while ((${#queue[@]})); do
  package=${queue[0]}
  queue=("${queue[@]:1}")
  absent=()
  for dep in $(depends "$package"); do
    [ -n "${seen[$dep]:-}" ] && continue
    seen[$dep]=1
    if installed "$dep"; then
      [ "$(dpkg-query -W -f='${Architecture}' "$dep")" = all ] && js+=("$dep")
    else
      absent+=("$dep")
    fi
  done
  ((${#absent[@]})) || continue
  while read -r dep arch; do
    if [ "$arch" = all ]; then
      js+=("$dep")
    else
      # libnode is nodejs's own build: of the same version
      if [[ $dep == libnode* ]]; then dep="$dep=$version"; fi
      download+=("$dep")
      queue+=("$dep")
    fi
  done < <(apt-cache show --no-all-versions "${absent[@]}" | awk '/^Package: / {p = $2} /^Architecture: / {print p, $2}')
done

debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
# (apt's downloads run as _apt where it exists: it must be able to write there)
id _apt >/dev/null 2>&1 && chown _apt "$debs"
echo "node18: fetching ${download[*]}" >&2
(cd "$debs" && apt-get download -q "${download[@]}" >/dev/null 2>&1) || {
  apt-get update -q >/dev/null
  (cd "$debs" && apt-get download -q "${download[@]}" >/dev/null)
}
rm -rf "${dir:?}/usr" "${dir:?}/lib"
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$dir"; done

# Where the unpacked libraries are (libnode's directory, and the others').
libdir=$(find "$dir" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)
echo "$libdir" >"$dir/libdir"
echo "${js[*]}" >"$dir/js-packages"
if LD_LIBRARY_PATH=$libdir ldd "$dir/usr/bin/node" | grep -q 'not found'; then
  echo "node18: a library of Node 18 is still missing:" >&2
  LD_LIBRARY_PATH=$libdir ldd "$dir/usr/bin/node" | grep 'not found' >&2
  exit 1
fi
works || { echo "node18: Debian's Node $version does not start" >&2; exit 1; }
echo "node18: Debian's Node $version in $dir" >&2
