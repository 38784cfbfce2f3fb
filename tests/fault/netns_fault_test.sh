#!/usr/bin/env bash
# One fault test over a real network path: two network namespaces joined by a veth pair, the
# fault_node server in one, the fault_node client (a client_pool under load, 8 workers) in the
# other, as separate processes. The client loads the path for 2 s, the fault is injected and
# held, then removed, and the load goes on for the recovery window. SIGUSR1 and SIGUSR2 mark the
# fault and the heal in the client: around the fault for nftables, the link and the kill (so
# the recovery time counts from when the path is back), inside it for the toxics (so the calls
# between the marks are certainly under the toxic). The client itself checks that every call
# ended within its bound, none was answered with another call's or damaged bytes, none was
# lost, and calls succeeded again after the heal; this script checks that the fault had an
# effect: packets dropped, calls failed, or (latency, bandwidth) the calls between the marks
# were as slow as the toxic makes them.
#   netns_fault_test.sh <scenario> <fault_node>
# Scenarios: loss (nftables drops 5 % of packets both ways), link_cut (veth down 2 s),
# blackhole (nftables drops everything in the server's namespace for 8 s: longer than the
# calls' deadlines, so TCP's retransmission back-off decides when the path works again),
# server_kill (SIGKILL mid-load, restart on the same port), latency, bandwidth, reset
# (toxiproxy toxics: +100±50 ms, 256 KB/s, TCP RST after 200 ms).
# Exits 77 (ctest: skipped), printing why, where namespaces or the fault's tool are missing.
# Env: CORVID_TOOLS (where scripts/setup put toxiproxy-server/-cli; PATH is searched too).
# (The client's margin on call durations scales with the build's CORVID_TEST_SLOWDOWN, compiled
# into fault_node: tests/support/slowdown.hpp.)
set -uo pipefail
scenario=${1:?scenario} node=${2:?fault_node}
skip() {
  echo "SKIPPED: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (uid $(id -u))"
command -v ip >/dev/null || skip "no ip command (iproute2)"
PATH=${CORVID_TOOLS:-/nonexistent}:$PATH

tag=cf$$
ns_s=${tag}s ns_c=${tag}c
addr_s=10.211.0.1 addr_c=10.211.0.2
port=7000 proxy_port=7001
work=$(mktemp -d)
server_pid='' client_pid='' toxi_pid=''
cleanup() {
  for p in $client_pid $server_pid $toxi_pid; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip netns del "$ns_s" 2>/dev/null
  ip netns del "$ns_c" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

case $scenario in
  loss | blackhole) command -v nft >/dev/null || skip "no nft (nftables; scripts/setup installs it)" ;;
  latency | bandwidth | reset)
    command -v toxiproxy-server >/dev/null && command -v toxiproxy-cli >/dev/null ||
      skip "no toxiproxy-server/toxiproxy-cli (scripts/setup installs them into build/tools/bin" \
        "with go; offline or without go they are missing)"
    ;;
  link_cut | server_kill) ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac

ip netns add "$ns_s" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$ns_c" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip link add name vs netns "$ns_s" type veth peer name vc netns "$ns_c" 2>"$work/err" ||
  skip "cannot create a veth pair: $(cat "$work/err")"
set -e
ip -n "$ns_s" addr add "$addr_s/24" dev vs
ip -n "$ns_c" addr add "$addr_c/24" dev vc
for ns in "$ns_s" "$ns_c"; do ip -n "$ns" link set lo up; done
ip -n "$ns_s" link set vs up
ip -n "$ns_c" link set vc up
set +e

# Waits up to 30 s (sanitizer builds on a loaded machine start slowly) for a line matching $2
# in file $1.
wait_for() {
  for _ in $(seq 300); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1:" >&2
  cat "$1" >&2
  return 1
}
start_server() {
  ip netns exec "$ns_s" "$node" server 0.0.0.0 $port >>"$work/server.log" 2>&1 &
  server_pid=$!
}
toxi() { ip netns exec "$ns_s" toxiproxy-cli -h http://127.0.0.1:8474 "$@" >>"$work/toxi.log" 2>&1; }

: >"$work/server.log"
start_server
wait_for "$work/server.log" "listening on $port" || exit 1
endpoint=$addr_s:$port
if [ -n "$(command -v toxiproxy-server || true)" ] && [[ $scenario =~ ^(latency|bandwidth|reset)$ ]]; then
  ip netns exec "$ns_s" toxiproxy-server -host 127.0.0.1 -port 8474 >"$work/toxiproxy.log" 2>&1 &
  toxi_pid=$!
  for _ in $(seq 100); do toxi list && break; sleep 0.1; done
  toxi create -l 0.0.0.0:$proxy_port -u 127.0.0.1:$port corvid || {
    cat "$work/toxi.log" "$work/toxiproxy.log"
    exit 1
  }
  endpoint=$addr_s:$proxy_port
fi

# Per scenario: how long the fault is held, the client's call timeout and payload sizes.
hold=3 timeout=1000 max_size=65536
case $scenario in
  loss) hold=5 timeout=2000 ;;
  link_cut) hold=2 ;;
  blackhole) hold=8 ;;
  server_kill) hold=1 max_size=262144 ;;
  latency) hold=4 ;;
  bandwidth) hold=4 max_size=262144 ;;
  reset) hold=3 ;;
esac
recovery_window=6
[ "$scenario" = blackhole ] && recovery_window=10
run_time=$((2 + hold + recovery_window))
ip netns exec "$ns_c" "$node" client "$endpoint" $run_time --workers 8 --timeout $timeout \
  --max-size $max_size >"$work/client.log" 2>"$work/client.err" &
client_pid=$!
wait_for "$work/client.log" "^running" || exit 1
sleep 2

# The marks: the client acknowledges each on stdout once recorded, so a mark is in place
# before the script goes on (a heal mark recorded after the toxic was gone would let fast
# calls count as calls under the fault).
marks=0
mark() {
  marks=$((marks + 1))
  kill -"$1" $client_pid
  wait_for "$work/client.log" "^marked $2" || exit 1
}
effect=''
echo "fault: $scenario for ${hold} s"
case $scenario in
  loss)
    mark USR1 fault
    ip netns exec "$ns_c" nft -f - <<'EOF'
table inet corvid_fault {
  chain in { type filter hook input priority 0; policy accept; numgen random mod 100 < 5 counter drop; }
  chain out { type filter hook output priority 0; policy accept; numgen random mod 100 < 5 counter drop; }
}
EOF
    sleep $hold
    effect=$(ip netns exec "$ns_c" nft list table inet corvid_fault | grep -o 'packets [0-9]*' |
      awk '{n += $2} END {print n + 0}')
    ip netns exec "$ns_c" nft delete table inet corvid_fault
    mark USR2 heal
    echo "nftables dropped $effect packets"
    ;;
  blackhole)
    mark USR1 fault
    ip netns exec "$ns_s" nft -f - <<'EOF'
table inet corvid_fault {
  chain in { type filter hook input priority 0; policy drop; iif lo accept; counter; }
  chain out { type filter hook output priority 0; policy drop; oif lo accept; counter; }
}
EOF
    sleep $hold
    effect=$(ip netns exec "$ns_s" nft list table inet corvid_fault | grep -o 'packets [0-9]*' |
      awk '{n += $2} END {print n + 0}')
    ip netns exec "$ns_s" nft delete table inet corvid_fault
    mark USR2 heal
    echo "nftables dropped $effect packets"
    ;;
  link_cut)
    mark USR1 fault
    ip -n "$ns_c" link set vc down
    sleep $hold
    ip -n "$ns_c" link set vc up
    mark USR2 heal
    ;;
  server_kill)
    mark USR1 fault
    kill -KILL $server_pid
    wait $server_pid 2>/dev/null
    sleep $hold
    start_server
    wait_for "$work/server.log" "listening on $port" || exit 1
    mark USR2 heal
    ;;
  latency | bandwidth | reset)
    # gap_ms: from asking for the toxic to the fault mark, an upper bound on how long the
    # toxic acted before the mark (the bandwidth check allows for it).
    t0=$(date +%s%3N)
    case $scenario in
      latency) toxi toxic add -t latency -a latency=100 -a jitter=50 -n fault corvid ;;
      bandwidth) toxi toxic add -t bandwidth -a rate=256 -n fault corvid ;;
      reset) toxi toxic add -t reset_peer -a timeout=200 -n fault corvid ;;
    esac || { cat "$work/toxi.log"; exit 1; }
    mark USR1 fault
    gap_ms=$(($(date +%s%3N) - t0))
    sleep $hold
    mark USR2 heal
    toxi toxic remove -n fault corvid || { cat "$work/toxi.log"; exit 1; }
    ;;
esac
[ $marks -eq 2 ] || { echo "internal error: $marks marks"; exit 2; }
echo "healed; client runs ${recovery_window} s more"
wait $client_pid
rc=$?
client_pid=''
sort "$work/client.err" | uniq -c | sort -rn | head -n 12
result=$(grep '^result ' "$work/client.log")
echo "$result"
[ -n "$result" ] || { echo "FAIL: the client printed no result (exit $rc)"; exit 1; }
[ $rc -eq 0 ] || { echo "FAIL: the client's checks failed (exit $rc)"; exit 1; }
field() { sed -E "s/.* $1=([^ ]*).*/\1/" <<<"$result"; }
# The fault must have hit: packets dropped, or calls that failed while it lasted.
case $scenario in
  loss | blackhole) [ "${effect:-0}" -gt 0 ] || { echo "FAIL: nftables dropped nothing"; exit 1; } ;;
esac
case $scenario in
  link_cut | blackhole | server_kill | reset)
    [ "$(field errors)" != none ] || { echo "FAIL: no call failed during the fault"; exit 1; }
    ;;
esac
# No reconnect storm: the server was gone for ~hold s while 8 workers kept calling through one
# pool; its back-off (20 ms doubling, jittered) allows a handful of connects per second, where
# connecting per call would make hundreds.
if [ "$scenario" = server_kill ]; then
  echo "pool: $(field connect_attempts) connect attempts, $(field connect_failures) failed"
  [ "$(field connect_attempts)" -le 40 ] || {
    echo "FAIL: $(field connect_attempts) connect attempts: a reconnect storm"
    exit 1
  }
fi
# Latency and bandwidth: the calls wholly between the marks must have been slowed by the toxic.
# Only lower bounds on time that the toxic itself guarantees, which a slow machine cannot break.
calls=$(field fault_calls)
case $scenario in
  latency | bandwidth)
    echo "between the marks: $calls calls in $(field fault_ms) ms, $(field fault_bytes) reply" \
      "bytes, fastest $(field fault_min_ms) ms, median $(field fault_p50_ms) ms"
    ;;
esac
case $scenario in
  latency)
    # Each reply waits 100 ms +- 50 ms in the toxic (the delay is drawn from [50, 150) ms), so
    # no call can take less than 50 ms (1 ms for clock rounding).
    [ "$calls" -ge 5 ] || { echo "FAIL: only $calls calls between the marks"; exit 1; }
    awk -v m="$(field fault_min_ms)" 'BEGIN { exit !(m >= 49) }' || {
      echo "FAIL: a call took $(field fault_min_ms) ms under the 100+-50 ms latency toxic"
      exit 1
    }
    ;;
  bandwidth)
    # The toxic forwards at most rate x (time it spent sleeping) per connection: 256 bytes per
    # ms (rate=256 KB/s) on each of the pool's 2 connections (load.hpp), over the time between
    # the marks plus gap_ms, plus one 25.6 KB slice each. The replies of calls begun after the
    # fault mark are a part of that. Without the toxic the path carries ~100x more.
    [ "$calls" -ge 5 ] || { echo "FAIL: only $calls calls between the marks"; exit 1; }
    cap=$(((256 * ($(field fault_ms) + gap_ms) + 25600) * 2))
    echo "the toxic's cap over the window: $cap bytes (gap $gap_ms ms)"
    [ "$(field fault_bytes)" -le $cap ] || {
      echo "FAIL: $(field fault_bytes) reply bytes between the marks, over the toxic's $cap"
      exit 1
    }
    ;;
esac
# The server stops gracefully on SIGTERM and exits 0 (a sanitizer report would make it fail).
kill -TERM $server_pid
wait $server_pid
src=$?
server_pid=''
[ $src -eq 0 ] || { echo "FAIL: the server exited $src on SIGTERM:"; tail -n 30 "$work/server.log"; exit 1; }
echo "PASS: $scenario (recovery $(field recovery_ms) ms after the heal)"
