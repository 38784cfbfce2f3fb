#!/usr/bin/env bash
# The Python client's checks, as one ctest entry: makes the venv (scripts/python-venv), runs
# pytest (python/tests) against the given C++ servers, `mypy --strict` on the package and the
# example, and the README's example against its server.
#   run_python_tests.sh VENV_DIR PYTHON_PEER_SERVER PYTHON_EXAMPLE_SERVER
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$1
peer=$2
example_server=$3
export PYTHONDONTWRITEBYTECODE=1
"$root/scripts/python-venv" "$venv" >/dev/null
py="$venv/bin/python"

echo "== pytest"
CORVID_PEER_SERVER=$peer "$py" -m pytest -q -p no:cacheprovider "$root/python/tests"

echo "== mypy --strict"
cache="$venv/../mypy-cache"
"$py" -m mypy --strict --cache-dir "$cache" "$root/python/corvid"
# User code declares remote functions with `...` bodies: mypy's empty-body check does not
# apply to them (docs/python.md).
"$py" -m mypy --strict --disable-error-code empty-body --cache-dir "$cache" \
  "$root/examples/python/example.py"

[ "$example_server" = none ] && exit 0
echo "== examples/python/example.py"
out=$(mktemp)
"$example_server" 0 >"$out" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 1 600); do
  grep -q "listening on" "$out" && break
  kill -0 "$server_pid" 2>/dev/null || { echo "example server died" >&2; exit 1; }
  sleep 0.05
done
port=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$out")
[ -n "$port" ] || { echo "example server did not start" >&2; exit 1; }
"$py" "$root/examples/python/example.py" "127.0.0.1:$port"
