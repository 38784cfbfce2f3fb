"""JSON <-> values of a schema's types (corvid._schema.Type), for `corvid call`.

In: bool is true/false; integers are JSON integers within their width (an enum's too, by its
underlying type); f32/f64 any JSON number; bytes a JSON string (sent as UTF-8) or
{"base64": "..."}; list, set and tuple JSON arrays ([T;N]: exactly N); a map a JSON object
(keys converted to the key type: integers, bool, bytes) or an array of [key, value] pairs;
optional null or the value; a variant {"index": i, "value": v}, or the value, taken by the
first alternative it converts to (`()` is null); a struct a JSON array of its fields in order,
or an object whose keys are the field names corvid-stubgen gives them (f0, f1, ...), all
present. Out: the same forms; a struct is an array, bytes a string when it is UTF-8 (else
{"base64": "..."}), a map with integer, bool or bytes keys an object, else pairs.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import math
import struct
from typing import Any, Callable

from ._schema import Type
from .stubgen import read_json
from ._types import Alt, Monostate

_F32_MAX = 3.4028234663852886e38


class ArgError(Exception):
    """A JSON value that is not of its type: `path` says where in the argument (".f1[2]")."""

    def __init__(self, path: str, t: Type, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.type = t
        self.message = message

    def describe(self, what: str) -> str:
        """"argument 2 (u8): 300 is out of range 0..255", "argument 1 at .f0 (i32): ..."."""
        at = f" at {self.path}" if self.path else ""
        return f"{what}{at} ({self.type.text}): {self.message}"


def parse_json(text: str, t: Type) -> Any:
    """A command-line argument's JSON text; ArgError when it is not JSON."""
    try:
        return read_json(text)
    except ValueError as e:
        hint = ""
        if t.kind == "bytes" and not text.lstrip().startswith('"'):
            hint = f" (a string needs JSON quotes: '{json.dumps(text)}')"
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ArgError("", t, f"not JSON ({e}): {shown!r}{hint}") from None


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _int_range(name: str) -> tuple[int, int]:
    bits = int(name[1:])
    if name[0] == "u":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    return "an array" if isinstance(v, list) else "an object"


def from_json(t: Type, v: Any, path: str = "") -> Any:
    """The value to encode for type `t` from JSON value `v`; ArgError names what is wrong."""

    def bad(why: str) -> ArgError:
        return ArgError(path, t, why)

    def want(*kinds: type) -> None:
        if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
            names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
                     list: "an array", dict: "an object"}
            expected = " or ".join(names[k] for k in kinds if not (k is int and float in kinds))
            kind = "" if v is None else f" {_json_kind(v)},"
            raise bad(f"{_show(v)} is{kind} not {expected}")

    k = t.kind
    if k == "bool":
        want(bool)
        return v
    if k in ("int", "enum"):
        name = t.name if k == "int" else t.args[0].name
        if isinstance(v, float) and v.is_integer() and not isinstance(v, bool):
            raise bad(f"{_show(v)} is not an integer (write it without a fraction)")
        want(int)
        lo, hi = _int_range(name)
        if not lo <= v <= hi:
            raise bad(f"{v} is out of range {lo}..{hi}")
        return v
    if k == "float":
        want(int, float)
        f = float(v)
        if t.name == "f32" and math.isfinite(f) and abs(f) > _F32_MAX:
            raise bad(f"{_show(v)} is out of the range of f32")
        return f
    if k == "bytes":
        if isinstance(v, dict) and set(v) == {"base64"} and isinstance(v["base64"], str):
            try:
                return base64.b64decode(v["base64"], validate=True)
            except binascii.Error as e:
                raise bad(f"not base64: {e}") from None
        want(str)
        return _utf8(v, lambda why: bad(why))
    if k == "unit":
        if v is not None:
            raise bad(f"{_show(v)} is not null")
        return Monostate()
    if k == "optional":
        return None if v is None else from_json(t.args[0], v, path)
    if k in ("list", "array", "set", "tuple"):
        want(list)
        n = t.size if k == "array" else len(t.args) if k == "tuple" else None
        if n is not None and len(v) != n:
            raise bad(f"{n} element(s) needed, {len(v)} given")
        types = t.args if k == "tuple" else [t.args[0]] * len(v)
        out = [from_json(et, x, f"{path}[{i}]") for i, (et, x) in enumerate(zip(types, v))]
        if k == "tuple":
            return tuple(out)
        if k == "set":
            seen: set[str] = set()
            for i, x in enumerate(v):
                key = json.dumps(x, sort_keys=True)
                if key in seen:
                    raise bad(f"element {i} ({_show(x)}) is there twice")
                seen.add(key)
        return out  # a set's encoder takes a list (struct elements need not hash)
    if k == "map":
        return _map(t, v, path)
    if k == "variant":
        return _variant(t, v, path)
    if k == "struct":
        fields = t.args
        if isinstance(v, dict):
            names = [f"f{i}" for i in range(len(fields))]
            if set(v) != set(names):
                missing = [n for n in names if n not in v]
                extra = [n for n in v if n not in names]
                raise bad(
                    f"the fields are {', '.join(names) or 'none'}"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; no field {', '.join(map(repr, extra))}" if extra else "")
                )
            v = [v[n] for n in names]
        want(list, dict)
        if len(v) != len(fields):
            raise bad(f"{len(fields)} field(s) needed, {len(v)} given")
        vals = [from_json(ft, x, f"{path}.f{i}") for i, (ft, x) in enumerate(zip(fields, v))]
        return t.ann(*vals)
    raise bad(f"{t.kind} values are not taken as arguments")


def _map(t: Type, v: Any, path: str) -> Any:
    kt, vt = t.args
    if isinstance(v, dict):
        pairs = [(_key(kt, key, f"{path}[{json.dumps(key)}]"), x) for key, x in v.items()]
    elif isinstance(v, list):
        pairs = []
        for i, p in enumerate(v):
            if not isinstance(p, list) or len(p) != 2:
                raise ArgError(f"{path}[{i}]", t, f"{_show(p)} is not a [key, value] pair")
            pairs.append((from_json(kt, p[0], f"{path}[{i}][0]"), p[1]))
    else:
        raise ArgError(path, t, f"{_show(v)} is {_json_kind(v)}, not an object or an array")
    out: dict[Any, Any] = {}
    for key, x in pairs:
        try:
            dup = key in out
        except TypeError:
            raise ArgError(path, t, "keys of this type are not supported") from None
        if dup:
            raise ArgError(path, t, f"key {_show(to_json(kt, key))} is there twice")
        out[key] = from_json(vt, x, f"{path}[{_show(to_json(kt, key))}]")
    return out


def _utf8(s: str, bad: Callable[[str], ArgError]) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise bad(f"not UTF-8 text ({e.reason} at {e.start})") from None


def _key(kt: Type, key: str, path: str) -> Any:
    """A JSON object's key (a string) as the map's key type."""
    if kt.kind == "bytes":
        return _utf8(key, lambda why: ArgError(path, kt, why))
    if kt.kind in ("int", "enum"):
        try:
            n = int(key, 10)
        except ValueError:
            raise ArgError(path, kt, f"key {key!r} is not an integer") from None
        return from_json(kt, n, path)
    if kt.kind == "bool" and key in ("true", "false"):
        return key == "true"
    raise ArgError(path, kt, "write this map as an array of [key, value] pairs")


def _variant(t: Type, v: Any, path: str) -> Any:
    alts = t.args
    if isinstance(v, dict) and set(v) == {"index", "value"}:
        i = v["index"]
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(alts):
            raise ArgError(path, t, f"index {_show(i)} is not 0..{len(alts) - 1}")
        return Alt(i, from_json(alts[i], v["value"], f"{path}<{i}>"))
    for i, a in enumerate(alts):
        try:
            return Alt(i, from_json(a, v, path))
        except ArgError:
            continue
    raise ArgError(
        path, t, f'{_show(v)} is none of the alternatives (pick one: {{"index": i, "value": v}})'
    )


def to_json(t: Type, v: Any) -> Any:
    """A decoded value of type `t` as JSON (for json.dumps)."""
    k = t.kind
    if v is None or isinstance(v, Monostate):
        return None
    if k == "variant":
        return _any_to_json(v)
    if k == "float" and t.name == "f32":
        return _short_f32(v)
    if k in ("int", "enum"):
        return int(v)
    if k == "bytes":
        return _bytes_to_json(v)
    if k == "optional":
        return to_json(t.args[0], v)
    if k in ("list", "array"):
        return [to_json(t.args[0], x) for x in v]
    if k == "set":
        items = [to_json(t.args[0], x) for x in v]
        return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
    if k == "tuple":
        return [to_json(et, x) for et, x in zip(t.args, v)]
    if k == "struct":
        return [to_json(ft, getattr(v, f"f{i}")) for i, ft in enumerate(t.args)]
    if k == "map":
        kt, vt = t.args
        pairs = [(to_json(kt, key), to_json(vt, x)) for key, x in v.items()]
        if kt.kind in ("int", "enum", "bool", "bytes") and all(
            isinstance(a, (str, int)) for a, _ in pairs
        ):
            return {a if isinstance(a, str) else json.dumps(a): b for a, b in pairs}
        return [[a, b] for a, b in pairs]
    return v


def _any_to_json(v: Any) -> Any:
    """A variant's value, whose alternative the decoder does not say: by its Python type."""
    if v is None or isinstance(v, Monostate):
        return None
    if isinstance(v, (bytes, bytearray)):
        return _bytes_to_json(bytes(v))
    if isinstance(v, enum.Enum):
        return int(v.value)
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_any_to_json(x) for x in v]
    if isinstance(v, dict):
        return [[_any_to_json(a), _any_to_json(b)] for a, b in v.items()]
    if hasattr(v, "__dataclass_fields__"):
        return [_any_to_json(getattr(v, n)) for n in v.__dataclass_fields__]
    return v


def _bytes_to_json(b: bytes) -> Any:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


def _short_f32(x: float) -> float:
    """The shortest decimal that reads back as the same f32 (0.1, not 0.10000000149...)."""
    if not math.isfinite(x):
        return x
    want = struct.pack("<f", x)
    for digits in range(1, 10):
        y = float(f"{x:.{digits}g}")
        if struct.pack("<f", y) == want:
            return y
    return x
