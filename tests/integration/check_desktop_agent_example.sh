#!/usr/bin/env bash
# Runs the README's computer-use example and checks what the model got back:
# a PNG image, the input done, the cursor where the click left it.
# (and that it left nothing in the default places: default_places.sh)
#   check_desktop_agent_example.sh EXAMPLE MAYURA_RUN
set -euo pipefail
. "$(dirname "$0")/default_places.sh"
out=$("$1")
echo "$out"
grep -q '^screen_screenshot -> image image/png, [0-9][0-9]* base64 bytes$' <<<"$out"
grep -q '^screen_click -> {"button":"left","count":1,"x":640,"y":400}$' <<<"$out"
grep -q '^screen_type -> {"typed":6}$' <<<"$out"
grep -q '^screen_key -> {"keys":"ctrl+a"}$' <<<"$out"
grep -q '^screen_cursor -> {"x":640,"y":400}$' <<<"$out"
expect_nothing_left_in_default_places "$2"
