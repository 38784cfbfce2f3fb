#!/usr/bin/env bash
# The Python client's checks, as one ctest entry: makes the venv (scripts/python-venv: the
# package built as a wheel, from an sdist, and installed), runs pytest (python/tests) against
# the INSTALLED package and the given C++ servers, `mypy --strict` on the package's source, on
# a consumer of the installed package (its py.typed) and on the example, and the README's
# example against its server.
#   run_python_tests.sh VENV_DIR PYTHON_PEER_SERVER PYTHON_EXAMPLE_SERVER
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
absolute() { case $1 in /* | none) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
venv=$1
peer=$(absolute "$2")
example_server=$(absolute "$3")
export PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH  # nothing but the venv's site-packages provides corvid
"$root/scripts/python-venv" "$venv" >/dev/null
venv=$(cd "$venv" && pwd)
py="$venv/bin/python"
# Python and mypy run from here, with -P (no current directory on sys.path), so that nothing
# of the source tree (python/corvid) shadows the installed package.
cd "$venv"

echo "== the installed package"
where=$("$py" -P -c 'import corvid; print(corvid.__file__)')
case "$where" in
  "$venv"/*) echo "corvid $("$py" -P -c 'import corvid; print(corvid.__version__)') at $where" ;;
  *) echo "corvid is imported from $where, not from the venv's wheel" >&2; exit 1 ;;
esac

echo "== pytest"
CORVID_PEER_SERVER=$peer CORVID_DIST="$venv/dist" CORVID_REQUIRE_INSTALLED=1 \
  "$py" -P -m pytest -q -rs -p no:cacheprovider "$root/python/tests"

echo "== mypy --strict"
cache="$venv/../mypy-cache"
"$py" -m mypy --strict --cache-dir "$cache" "$root/python/corvid"
# User code declares remote functions with `...` bodies: mypy's empty-body check does not
# apply to them (docs/python.md).
"$py" -m mypy --strict --disable-error-code empty-body --cache-dir "$cache" \
  "$root/examples/python/example.py"
# A consumer of the installed package: mypy finds it in site-packages, typed by its py.typed
# (without the marker this fails: "module is installed, but missing library stubs").
"$py" -m mypy --strict --disable-error-code empty-body --cache-dir "$cache-installed" \
  "$root/python/tests/consumer/typed_consumer.py"

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
