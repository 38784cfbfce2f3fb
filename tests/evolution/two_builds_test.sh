#!/usr/bin/env bash
# A server built from one schema version and a client built from another, over a real socket.
# Usage: two_builds_test.sh <server binary> <client binary> <server version>
set -euo pipefail
server=$1 client=$2 server_version=$3
log=$(mktemp)
"$server" serve >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
port=$(awk '/listening on/ {print $3}' "$log")
[ -n "$port" ] || { cat "$log"; echo "schema_peer did not start" >&2; exit 1; }
timeout 60 "$client" call "127.0.0.1:$port" "$server_version"
kill -TERM "$pid"
wait "$pid"
