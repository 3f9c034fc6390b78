# Sourced first by the scripts a person runs (mayura-run.sh, test.sh,
# bench.sh, fuzz.sh): they install Debian packages, and the engine needs
# root. Root runs them as they are (this project's machines have no sudo);
# anyone else is asked through sudo, once, for the whole script.
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "$(basename "$0"): needs root, and sudo is not installed" >&2
    exit 1
  fi
  exec sudo -- "$0" "$@"
fi
