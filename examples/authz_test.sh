#!/usr/bin/env bash
# The authorization example as processes: certificates made here with openssl (a CA, the
# server's for localhost, a client's with an allowlisted SPIFFE id and one with another),
# authz_server on an ephemeral port, and authz_client as an allowed and a refused caller.
# Usage: authz_test.sh <authz_server> <authz_client>
set -euo pipefail
server=$1 client=$2
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir"

# cert <name> <subject> <subjectAltName>: a P-256 key and a certificate signed by the CA.
cert() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" \
    -subj "$2" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
  -subj "/CN=authz example CA" -days 1 -out ca.pem 2>/dev/null
cert server "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
cert reporter "/CN=reporter" "URI:spiffe://example.org/ns/prod/sa/reporter"
cert intruder "/CN=intruder" "URI:spiffe://example.org/ns/dev/sa/reporter"

AUTHZ_TOKEN=s3cret "$server" 0 server.pem server.key ca.pem >server.log 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q "listening on" server.log && break
  sleep 0.1
done
port=$(awk '/listening on/ {print $3}' server.log)
[ -n "$port" ] || { cat server.log; echo "authz_server did not start" >&2; exit 1; }
endpoint=localhost:$port

# Allowed: the SPIFFE id is on the allowlist and the token is right.
out=$(AUTHZ_TOKEN=s3cret timeout 30 "$client" "$endpoint" ca.pem reporter.pem reporter.key)
echo "$out"
grep -q 'whoami: spiffe://example.org/ns/prod/sa/reporter' <<<"$out"
grep -q 'read_report: report daily: all green (report-version 7)' <<<"$out"
# Another SPIFFE id and a wrong token: it proved who it is, so permission_denied twice.
out=$(AUTHZ_TOKEN=guess timeout 30 "$client" "$endpoint" ca.pem intruder.pem intruder.key) &&
  { echo "the intruder got in" >&2; exit 1; }
echo "$out"
grep -q 'whoami refused: permission_denied' <<<"$out"
grep -q 'read_report refused: permission_denied' <<<"$out"
# No certificate and a wrong token: nobody proved anything, so unauthenticated.
out=$(AUTHZ_TOKEN=guess timeout 30 "$client" "$endpoint" ca.pem) &&
  { echo "the anonymous caller got in" >&2; exit 1; }
echo "$out"
grep -q 'whoami refused: unauthenticated' <<<"$out"
# No certificate, the right token: read_report only.
out=$(AUTHZ_TOKEN=s3cret timeout 30 "$client" "$endpoint" ca.pem) || true
echo "$out"
grep -q 'read_report: report daily' <<<"$out"
# The server printed the identity its handler saw.
grep -q 'whoami: subject=CN=reporter uris=\[spiffe://example.org/ns/prod/sa/reporter\]' server.log
kill -TERM "$pid"
wait "$pid"
pid=
