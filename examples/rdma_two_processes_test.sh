#!/usr/bin/env bash
# Seed 000's RDMA example as two processes: rdma_echo_server on an ephemeral port,
# rdma_echo_client against it, over softverbs unless CORVID_TEST_VERBS_PROVIDER=ibverbs.
# Usage: rdma_two_processes_test.sh <server> <client>
set -euo pipefail
server=$1 client=$2
# The examples' init_ibv() takes its provider from CORVID_VERBS_PROVIDER; the tests' choice
# is CORVID_TEST_VERBS_PROVIDER (default soft, as in tests/rdma/test_provider.hpp).
export CORVID_VERBS_PROVIDER=${CORVID_TEST_VERBS_PROVIDER:-soft}
log=$(mktemp)
"$server" 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
port=$(awk '/listening on/ {print $3}' "$log")
[ -n "$port" ] || { cat "$log"; echo "rdma_echo_server did not start" >&2; exit 1; }
out=$(timeout 60 "$client" "127.0.0.1:$port" 20000)
echo "$out"
grep -q 'echo("hello rdma") = "hello rdma"' <<<"$out"
grep -q 'add(3, 4) = 7 (pipelined)' <<<"$out"
grep -q 'echo(1 MiB) ok' <<<"$out"
grep -q ', 0 failed' <<<"$out"
# The calls really went over RDMA: the client posted sends.
grep -Eq 'rdma sends [1-9][0-9]*' <<<"$out"
kill -TERM "$pid"
wait "$pid"
