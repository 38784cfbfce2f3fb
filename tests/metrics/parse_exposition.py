#!/usr/bin/env python3
"""Parses a Prometheus text exposition with prometheus_client's own parser and checks it.

Usage: parse_exposition.py [--client] FILE METHOD [FAMILY=TYPE ...]
Exit 0: parsed, every family has HELP text, and FILE's families hold what a server that
served METHOD must show (with --client: what client metrics that called METHOD must show),
and each FAMILY, of its TYPE.
Exit 77: prometheus_client is not installed (the test skips). Anything else: a failure.
"""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(77)


def main():
    args = sys.argv[1:]
    client = args[0] == "--client"
    if client:
        args = args[1:]
    text = open(args[0], encoding="utf-8").read()
    method = args[1]
    families = {f.name: f for f in text_string_to_metric_families(text)}
    if client:
        side = "corvid_client"
        types = {
            "corvid_client_calls": "counter",
            "corvid_client_call_errors": "counter",
            "corvid_client_call_duration_seconds": "histogram",
            "corvid_client_calls_in_flight": "gauge",
            "corvid_client_request_bytes": "counter",
            "corvid_client_reply_bytes": "counter",
            "corvid_client_connects": "counter",
            "corvid_client_connections": "gauge",
        }
    else:
        side = "corvid_server"
        types = {
            "corvid_server_calls": "counter",
            "corvid_server_errors": "counter",
            "corvid_server_call_duration_seconds": "histogram",
            "corvid_server_requests_in_flight": "gauge",
            "corvid_server_request_bytes": "counter",
            "corvid_server_reply_bytes": "counter",
            "corvid_server_connections": "gauge",
            "corvid_server_memory_bytes": "gauge",
        }
    for extra in args[2:]:
        name, kind = extra.split("=")
        types[name] = kind
    for family in families.values():
        if not family.documentation:
            sys.exit(f"{family.name} has no HELP text")
    for name, kind in types.items():
        if name not in families:
            sys.exit(f"missing family {name}; have {sorted(families)}")
        if families[name].type != kind:
            sys.exit(f"{name} is a {families[name].type}, not a {kind}")
        if not families[name].documentation:
            sys.exit(f"{name} has no HELP text")
    calls = [s for s in families[side + "_calls"].samples if s.labels.get("method") == method]
    if not calls or calls[0].value < 1:
        sys.exit(f"no calls counted for {method}")
    hist = [s for s in families[side + "_call_duration_seconds"].samples
            if s.labels.get("method") == method]
    buckets = [s for s in hist if s.name.endswith("_bucket")]
    count = [s.value for s in hist if s.name.endswith("_count")]
    total = [s.value for s in hist if s.name.endswith("_sum")]
    if not buckets or buckets[-1].labels["le"] != "+Inf" or not count or not total:
        sys.exit(f"histogram of {method} lacks _bucket/+Inf/_count/_sum")
    values = [b.value for b in buckets]
    if values != sorted(values) or values[-1] != count[0]:
        sys.exit(f"buckets of {method} are not cumulative up to _count: {values} vs {count}")
    if total[0] <= 0:
        sys.exit(f"_sum of {method} is {total[0]}")
    print(f"ok: {len(families)} families")


main()
