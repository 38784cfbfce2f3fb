"""Per-method call settings: the timeout, whether a method may run twice, its retries and its
hedging, for one method, a namespace of methods or every method. The same JSON document as the
C++ client's `corvid::method_config` (include/corvid/client/method_config.hpp), validated by
the same rules:

    {"methods": [
        {"name": "shop::get_user", "timeout_ms": 200, "idempotent": true, "max_attempts": 3,
         "hedging": {"max_copies": 3, "delay_ms": 15, "delay_quantile": 0.95}},
        {"name": "shop::", "timeout_ms": 1000},
        {"name": "*", "timeout_ms": 5000}]}

A method takes each setting from the most specific entry that has it: its own name, then the
longest namespace its name starts with, then "*".
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable, NoReturn, TypeVar

_DAY_MS = 86_400_000
_MAX_ENTRIES = 10_000

T = TypeVar("T")
_INVALID = object()


@dataclasses.dataclass(frozen=True)
class HedgingPolicy:
    """Hedged requests, as the C++ load balancer sends them: when the first copy of a call of an
    idempotent method has not answered after `delay` seconds, another copy goes to a different
    endpoint, up to `max_copies` in flight (the first included). `delay_quantile` in (0, 1):
    wait for that quantile of the method's recent latencies instead (at least `delay`)."""

    max_copies: int = 2
    delay: float = 0.010
    delay_quantile: float = 0.0


@dataclasses.dataclass(frozen=True)
class MethodPolicy:
    """One method's settings; None: not set by any entry that applies to it."""

    timeout: float | None = None  # seconds
    idempotent: bool | None = None  # may run more than once
    max_attempts: int | None = None
    hedging: HedgingPolicy | None = None
    # False: the method's requests are never compressed; True or None: as the connection's
    # compression allows (Client(compression=True)).
    compress: bool | None = None


def _fail(message: str) -> NoReturn:
    raise ValueError(message)


# JSON's true and false are no numbers, though Python's bool is an int: each check below
# refuses a bool first.


def _millis(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _DAY_MS:
        _fail(f'"{what}" must be a whole number of ms in [0, 86400000]')
    return v


def _count(v: object, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        _fail(f'"{what}" must be a whole number in [{lo}, {hi}]')
    return v


def _items(obj: dict[str, Any]) -> list[tuple[str, Any]]:
    # In key order, as the C++ parser reads them: a document with several faults is refused
    # for the same one in both clients.
    return sorted(obj.items())


def _parse_hedging(h: object) -> HedgingPolicy:
    if not isinstance(h, dict):
        _fail('"hedging" must be an object')
    max_copies, delay_ms, quantile = 2, 10, 0.0
    for key, v in _items(h):
        if key == "max_copies":
            max_copies = _count(v, "max_copies", 1, 8)
        elif key == "delay_ms":
            delay_ms = _millis(v, "delay_ms")
        elif key == "delay_quantile":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                _fail('"delay_quantile" must be a number in [0, 1)')
            quantile = float(v)
        else:
            _fail(f'unknown hedging setting "{key}"')
    return HedgingPolicy(max_copies, delay_ms / 1000, quantile)


def _parse_entry(e: object) -> tuple[str, MethodPolicy]:
    if not isinstance(e, dict):
        _fail('each entry of "methods" must be an object')
    name = ""
    fields: dict[str, Any] = {}
    for key, v in _items(e):
        if key == "name":
            if not isinstance(v, str) or not v:
                _fail('"name" must be a non-empty string')
            name = v
        elif key == "timeout_ms":
            ms = _millis(v, "timeout_ms")
            if ms == 0:
                _fail('"timeout_ms" must be at least 1')
            fields["timeout"] = ms / 1000
        elif key == "idempotent":
            if not isinstance(v, bool):
                _fail('"idempotent" must be true or false')
            fields["idempotent"] = v
        elif key == "max_attempts":
            fields["max_attempts"] = _count(v, "max_attempts", 1, 10)
        elif key == "compress":
            if not isinstance(v, bool):
                _fail('"compress" must be true or false')
            fields["compress"] = v
        elif key == "hedging":
            fields["hedging"] = _parse_hedging(v)
        else:
            _fail(f'unknown method setting "{key}"')
    if not name:
        _fail('an entry of "methods" has no "name"')
    return name, MethodPolicy(**fields)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is no JSON number")


def _lone_surrogate(doc: object) -> bool:
    """Some string holds half a UTF-16 surrogate pair ("\\ud800"): JSON parsers that check
    their text (the C++ client's does) refuse it, Python's json takes it."""
    todo = [doc]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            if any("\ud800" <= c <= "\udfff" for c in v):
                return True
        elif isinstance(v, list):
            todo += v
        elif isinstance(v, dict):
            todo += v.keys()
            todo += v.values()
    return False


def _first(policies: list[MethodPolicy], field: Callable[[MethodPolicy], T | None]) -> T | None:
    for p in policies:
        v = field(p)
        if v is not None:
            return v
    return None


class MethodConfig:
    """Per-method settings, set in code or read from the C++ client's JSON document.

    The Python Client is one connection: it applies a method's `timeout` to calls made
    without an explicit timeout and its `compress` to calls made without `compress=`, and
    does not retry or hedge; `idempotent`, `max_attempts` and `hedging` are validated and
    returned by resolve() for code that acts on them."""

    def __init__(self) -> None:
        self._entries: dict[str, MethodPolicy] = {}
        self._resolved: dict[str, MethodPolicy] = {}

    def set(self, name: str, policy: MethodPolicy) -> MethodConfig:
        """`name`: a method's qualified name as the server registers it ("shop::get_user"), a
        namespace ending in "::" ("shop::"), or "*" for every method. Setting a name again
        replaces its entry. A timeout under 1 ms is taken as 1 ms."""
        if not name:
            raise ValueError("a method config entry needs a name")
        if policy.timeout is not None and policy.timeout < 0.001:
            policy = dataclasses.replace(policy, timeout=0.001)
        self._entries[name] = policy
        self._resolved.clear()
        return self

    def resolve(self, name: str) -> MethodPolicy:
        """The settings that apply to the method `name` (each from the most specific entry
        that has it)."""
        hit = self._resolved.get(name)
        if hit is not None:
            return hit
        own = self._entries.get(name) if name != "*" and not name.endswith("::") else None
        spaces = sorted(
            (n for n in self._entries if n.endswith("::") and name.startswith(n)),
            key=len,
            reverse=True,
        )
        chain = [own] if own is not None else []
        chain += [self._entries[n] for n in spaces]
        if "*" in self._entries:
            chain.append(self._entries["*"])
        out = MethodPolicy(
            timeout=_first(chain, lambda p: p.timeout),
            idempotent=_first(chain, lambda p: p.idempotent),
            max_attempts=_first(chain, lambda p: p.max_attempts),
            hedging=_first(chain, lambda p: p.hedging),
            compress=_first(chain, lambda p: p.compress),
        )
        self._resolved[name] = out
        return out

    @property
    def empty(self) -> bool:
        return not self._entries

    @classmethod
    def parse(cls, text: str) -> MethodConfig:
        """Reads {"methods": [{"name": ..., "timeout_ms": N, "idempotent": B,
        "max_attempts": N, "hedging": {"max_copies": N, "delay_ms": N, "delay_quantile": Q},
        "compress": B}, ...]}. Unknown keys and values out of range raise ValueError: a misspelt setting must
        not be ignored silently."""
        # A byte order mark in front is skipped, as the C++ parser does.
        text = text.removeprefix("\ufeff")
        try:
            doc = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            doc = _INVALID
        if doc is _INVALID or _lone_surrogate(doc):
            raise ValueError("not valid JSON")
        if not isinstance(doc, dict):
            _fail("the document must be a JSON object")
        out = cls()
        for key, v in _items(doc):
            if key != "methods":
                _fail(f'unknown top-level key "{key}"')
            if not isinstance(v, list):
                _fail('"methods" must be an array')
            if len(v) > _MAX_ENTRIES:
                _fail('"methods" has more than 10000 entries')
            for e in v:
                out.set(*_parse_entry(e))
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MethodConfig:
        """parse() of a UTF-8 file."""
        with open(path, encoding="utf-8") as f:
            return cls.parse(f.read())
