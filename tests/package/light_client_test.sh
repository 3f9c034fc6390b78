#!/usr/bin/env bash
# mayura-run (the light client) loads none of the engine's libraries nor
# OpenSSL (a daemon over https it hands over too), and
# mayura-run-local (which it hands the rest to) has them all.
#   light_client_test.sh MAYURA_RUN MAYURA_RUN_LOCAL
set -euo pipefail
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
client=$(needed "$1")
local_=$(needed "$2")
echo "mayura-run needs:" $client
status=0
for lib in libnftables libnl-3 libnl-route-3 libseccomp libarchive libcap libssl libcrypto; do
  if grep -q "^$lib\.so" <<<"$client"; then echo "mayura-run loads $lib"; status=1; fi
done
for lib in libnftables libnl-3 libseccomp libarchive; do
  grep -q "^$lib\.so" <<<"$local_" || { echo "mayura-run-local lacks $lib"; status=1; }
done
exit $status
