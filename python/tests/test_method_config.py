"""MethodConfig: the C++ client's per-method settings document, read by the same rules
(src/client/method_config.cpp), and where each setting of a method comes from."""

from __future__ import annotations

import pathlib

import pytest

import corvid
from corvid import HedgingPolicy, MethodConfig, MethodPolicy

DOC = """{"methods": [
    {"name": "shop::get_user", "timeout_ms": 200, "idempotent": true, "max_attempts": 3,
     "hedging": {"max_copies": 3, "delay_ms": 15, "delay_quantile": 0.95}},
    {"name": "shop::", "timeout_ms": 1000, "max_attempts": 2},
    {"name": "shop::admin::", "idempotent": false},
    {"name": "*", "timeout_ms": 5000, "idempotent": true, "hedging": {}}]}"""


def test_each_setting_comes_from_the_most_specific_entry_that_has_it() -> None:
    m = MethodConfig.parse(DOC)
    assert m.resolve("shop::get_user") == MethodPolicy(
        timeout=0.2,
        idempotent=True,
        max_attempts=3,
        hedging=HedgingPolicy(max_copies=3, delay=0.015, delay_quantile=0.95),
    )
    # The namespace's timeout and attempts, "*"'s idempotence and (default) hedging.
    assert m.resolve("shop::list") == MethodPolicy(
        timeout=1.0, idempotent=True, max_attempts=2, hedging=HedgingPolicy()
    )
    # The longest namespace first: its idempotent over "*"'s, "shop::"'s timeout still.
    assert m.resolve("shop::admin::ban") == MethodPolicy(
        timeout=1.0, idempotent=False, max_attempts=2, hedging=HedgingPolicy()
    )
    assert m.resolve("other") == MethodPolicy(timeout=5.0, idempotent=True, hedging=HedgingPolicy())
    # A namespace matches by prefix, names ending in "::" only: "shop" is no method of it.
    assert m.resolve("shop").timeout == 5.0
    assert MethodConfig().resolve("shop::get_user") == MethodPolicy()


def test_set_replaces_an_entry_and_resolve_sees_it() -> None:
    m = MethodConfig.parse(DOC)
    assert m.resolve("shop::list").timeout == 1.0
    m.set("shop::", MethodPolicy(idempotent=False))
    assert m.resolve("shop::list") == MethodPolicy(
        timeout=5.0, idempotent=False, hedging=HedgingPolicy()
    )
    m.set("shop::list", MethodPolicy(timeout=0))  # under 1 ms: 1 ms
    assert m.resolve("shop::list").timeout == 0.001
    with pytest.raises(ValueError):
        m.set("", MethodPolicy())
    assert MethodConfig().empty and not m.empty


def test_a_later_entry_of_the_same_name_replaces_the_earlier() -> None:
    m = MethodConfig.parse(
        '{"methods": [{"name": "f", "timeout_ms": 5, "idempotent": true},'
        ' {"name": "f", "max_attempts": 2}]}'
    )
    assert m.resolve("f") == MethodPolicy(max_attempts=2)


def test_bounds_are_accepted() -> None:
    m = MethodConfig.parse(
        '{"methods": [{"name": "a", "timeout_ms": 86400000, "max_attempts": 10,'
        ' "hedging": {"max_copies": 8, "delay_ms": 0, "delay_quantile": 0}},'
        ' {"name": "b", "timeout_ms": 1, "max_attempts": 1,'
        ' "hedging": {"max_copies": 1, "delay_ms": 86400000, "delay_quantile": 0.999}}]}'
    )
    assert m.resolve("a") == MethodPolicy(
        timeout=86400.0, max_attempts=10, hedging=HedgingPolicy(8, 0.0, 0.0)
    )
    assert m.resolve("b") == MethodPolicy(
        timeout=0.001, max_attempts=1, hedging=HedgingPolicy(1, 86400.0, 0.999)
    )
    assert MethodConfig.parse('{"methods": []}').empty
    assert MethodConfig.parse("{}").empty
    assert MethodConfig.parse('\ufeff{"methods": [{"name": "\\ud83d\\udc26"}]}').empty is False


BAD = [
    # tests/client/method_config_test.cpp, refuses_malformed_and_misspelt_documents
    "",
    "[]",
    '{"methods": {}}',
    '{"method": []}',
    '{"methods": [{"timeout_ms": 5}]}',
    '{"methods": [{"name": ""}]}',
    '{"methods": [{"name": "f", "timeout": 5}]}',
    '{"methods": [{"name": "f", "timeout_ms": -1}]}',
    '{"methods": [{"name": "f", "timeout_ms": 0}]}',
    '{"methods": [{"name": "f", "timeout_ms": 1.5}]}',
    '{"methods": [{"name": "f", "timeout_ms": 1e30}]}',
    '{"methods": [{"name": "f", "idempotent": 1}]}',
    '{"methods": [{"name": "f", "max_attempts": 0}]}',
    '{"methods": [{"name": "f", "max_attempts": 1000}]}',
    '{"methods": [{"name": "f", "hedging": {"copies": 2}}]}',
    '{"methods": [{"name": "f", "hedging": {"max_copies": 100}}]}',
    '{"methods": [{"name": "f", "hedging": {"delay_quantile": 1}}]}',
    '{"methods": [{"name": "f", "hedging": 3}]}',
    '{"methods": [1]}',
    # JSON's booleans are no numbers (Python's bool is an int).
    '{"methods": [{"name": "f", "timeout_ms": true}]}',
    '{"methods": [{"name": "f", "max_attempts": true}]}',
    '{"methods": [{"name": "f", "hedging": {"max_copies": true}}]}',
    '{"methods": [{"name": "f", "hedging": {"delay_ms": false}}]}',
    '{"methods": [{"name": "f", "hedging": {"delay_quantile": false}}]}',
    # A whole number written as a fraction is still a fraction in JSON.
    '{"methods": [{"name": "f", "timeout_ms": 5.0}]}',
    # What Python's json takes and JSON does not.
    '{"methods": [{"name": "f", "hedging": {"delay_quantile": NaN}}]}',
    '{"methods": [{"name": "f", "timeout_ms": Infinity}]}',
    '{"methods": [{"name": "\\ud800"}]}',
    # The rest of the rules.
    '{"methods": [{"name": 5}]}',
    '{"methods": [{"name": "f", "timeout_ms": 86400001}]}',
    '{"methods": [{"name": "f", "idempotent": "yes"}]}',
    '{"methods": [{"name": "f", "hedging": {"delay_ms": -1}}]}',
    '{"methods": [{"name": "f", "hedging": {"delay_quantile": -0.5}}]}',
    '{"methods": [{"name": "f", "hedging": {"delay_quantile": "0.5"}}]}',
    '{"methods": [{"name": "f"}], "extra": 1}',
    '{"methods": [{"name": "f"}]} trailing',
    "[" * 100_000,
    '{"methods": [' + ",".join(['{"name": "f"}'] * 10_001) + "]}",
]


@pytest.mark.parametrize("doc", BAD, ids=range(len(BAD)))
def test_refuses_malformed_and_misspelt_documents(doc: str) -> None:
    with pytest.raises(ValueError) as e:
        MethodConfig.parse(doc)
    assert str(e.value)


def test_errors_name_the_problem_as_the_cpp_client_does() -> None:
    cases = {
        '{"methods": [{"name": "f", "timeout_ms": true}]}': (
            '"timeout_ms" must be a whole number of ms in [0, 86400000]'
        ),
        '{"methods": [{"name": "f", "timeout_ms": 0}]}': '"timeout_ms" must be at least 1',
        '{"methods": [{"name": "f", "max_attempts": 11}]}': (
            '"max_attempts" must be a whole number in [1, 10]'
        ),
        '{"methods": [{"name": "f", "hedging": {"copies": 2}}]}': (
            'unknown hedging setting "copies"'
        ),
        '{"methods": [{"name": "f", "timeout": 5}]}': 'unknown method setting "timeout"',
        '{"method": []}': 'unknown top-level key "method"',
        '{"methods": [{"idempotent": true}]}': 'an entry of "methods" has no "name"',
        # Keys are read in order, as the C++ parser (a sorted map) does: "idempotent" first.
        '{"timeout_ms": 0, "idempotent": 2, "name": "f"}': 'unknown top-level key "idempotent"',
        '{"methods": [{"timeout_ms": 0, "idempotent": 2, "name": "f"}]}': (
            '"idempotent" must be true or false'
        ),
        "[]": "the document must be a JSON object",
        "{": "not valid JSON",
    }
    for doc, message in cases.items():
        with pytest.raises(ValueError) as e:
            MethodConfig.parse(doc)
        assert str(e.value) == message, doc


def test_load_reads_a_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "methods.json"
    path.write_text(DOC, encoding="utf-8")
    assert MethodConfig.load(path).resolve("shop::get_user").max_attempts == 3
    path.write_text('{"methods": [{"name": "f", "timeout_ms": "5"}]}', encoding="utf-8")
    with pytest.raises(ValueError):
        MethodConfig.load(str(path))


def test_the_client_takes_a_calls_default_timeout_from_its_method() -> None:
    m = MethodConfig().set("ns::", MethodPolicy(timeout=0.25)).set("fast", MethodPolicy())
    c = corvid.Client(request_timeout=7.0, methods=m)
    assert c._default_timeout("ns::twice") == 0.25
    assert c._default_timeout("fast") == 7.0  # an entry without a timeout: request_timeout
    assert corvid.Client(methods=m)._default_timeout("other") is None


def test_a_timeout_in_seconds_becomes_the_same_milliseconds_on_the_wire() -> None:
    from corvid._client import _timeout_ms

    # 2.007 * 1000 is 2007.0000000000002 in binary floating point: not 2008 ms.
    wrong = [ms for ms in range(1, 100_000) if _timeout_ms(ms / 1000) != ms]
    assert wrong == []
    assert _timeout_ms(0.0000001) == 1
    assert _timeout_ms(0.0015) == 2  # a fraction of a millisecond rounds up
