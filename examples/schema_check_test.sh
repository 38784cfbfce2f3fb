#!/usr/bin/env bash
# The examples' schema against the committed one: corvid-schema must find no breaking change.
# Usage: schema_check_test.sh <echo_schema> <corvid-schema> <committed schema>
set -euo pipefail
current=$(mktemp)
trap 'rm -f "$current"' EXIT
"$1" >"$current"
"$2" check "$3" "$current"
