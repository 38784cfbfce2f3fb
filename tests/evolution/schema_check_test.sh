#!/usr/bin/env bash
# corvid-schema check on the inventory service's three versions and on edited copies of v2's
# schema: appended fields pass; a changed parameter list, removed, reordered and retyped fields
# fail, each with its explanation. Also: v2's schema is the committed schemas/v2.json.
# Usage: schema_check_test.sh <corvid-schema> <schema_peer_v1> <schema_peer_v2> <schema_peer_v3>
set -euo pipefail
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
"$2" describe >"$dir/v1.json"
"$3" describe >"$dir/v2.json"
"$4" describe >"$dir/v3.json"
fail() { echo "FAILED: $*" >&2; exit 1; }

# expect <exit code> <old> <new> <text the output must contain>
expect() {
  local code=0
  out=$("$tool" check "$2" "$3") || code=$?
  echo "--- check $(basename "$2") $(basename "$3") (exit $code)"
  echo "$out"
  [ "$code" = "$1" ] || fail "exit $code, expected $1"
  grep -qF -- "$4" <<<"$out" || fail "output lacks: $4"
}

cmp "$dir/v2.json" "$here/schemas/v2.json" || fail "v2's schema differs from schemas/v2.json"
expect 0 "$dir/v1.json" "$dir/v2.json" \
  "struct inventory::item: 2 field(s) appended: compatible"
expect 0 "$dir/v2.json" "$dir/v2.json" "compatible"
expect 1 "$dir/v2.json" "$dir/v3.json" \
  "function inventory::price: parameters changed from (u32) to (u64)"
expect 1 "$dir/v2.json" "$dir/v1.json" "struct inventory::item: 2 field(s) removed from its end"
expect 1 "$dir/v2.json" "$here/schemas/v2_reordered.json" \
  "struct inventory::item: field 3 changed from u32 to ?bytes"
expect 1 "$dir/v2.json" "$here/schemas/v2_retyped.json" \
  "struct inventory::query: field 2 changed from u32 to u64"
expect 1 "$dir/v2.json" "$here/schemas/v2_renamed.json" \
  "struct inventory::item no longer used by any function, or renamed"
echo "all schema checks hold"
