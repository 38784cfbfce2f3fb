#!/usr/bin/env bash
# The seed example as two processes: echo_server on an ephemeral port, echo_client against it.
# Usage: two_processes_test.sh <echo_server> <echo_client>
set -euo pipefail
server=$1 client=$2
log=$(mktemp)
# No stdbuf: it works by LD_PRELOAD, which sanitizer builds refuse; the server flushes itself.
"$server" 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
port=$(awk '/listening on/ {print $3}' "$log")
[ -n "$port" ] || { cat "$log"; echo "echo_server did not start" >&2; exit 1; }
out=$(timeout 60 "$client" "127.0.0.1:$port" 20000)
echo "$out"
grep -q 'echo("hello") = "hello"' <<<"$out"
grep -q 'add(3, 4) = 7 (pipelined)' <<<"$out"
grep -q ', 0 failed' <<<"$out"
# SIGTERM stops the server gracefully: it must exit 0.
kill -TERM "$pid"
wait "$pid"
