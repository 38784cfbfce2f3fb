"""corvid-stubgen: typed Python declarations from a server's describe_schema output.

    corvid-stubgen schema.json > stubs.py

The schema (docs/codec.md, "Checking a change") gives each function's name, signature
fingerprint, parameter and result types in canonical form, and every struct with its layout
and field types. Field and parameter names are not in it (the C++ library cannot see them),
so fields are f0, f1, ... and parameters p0, p1, ... Each generated declaration's fingerprint,
computed the way the client computes it, is checked against the schema's.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from typing import Any, Generic, TypeVar

from ._frame import fingerprint

_SCALARS = {
    "bool": "bool",
    "i8": "corvid.i8",
    "u8": "corvid.u8",
    "i16": "corvid.i16",
    "u16": "corvid.u16",
    "i32": "corvid.i32",
    "u32": "corvid.u32",
    "i64": "corvid.i64",
    "u64": "corvid.u64",
    "f32": "corvid.f32",
    "f64": "corvid.f64",
}


class SchemaError(Exception):
    pass


def read_json(text: str) -> Any:
    """json.loads, with nesting too deep for the parser (a RecursionError, from a hostile
    schema or argument) reported as the ValueError any other bad JSON gives."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def py_name(qualified: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "_", qualified.replace("::", "_"))
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    return name


T = TypeVar("T")


class TypeScanner(Generic[T]):
    """Reads canonical type text (docs/codec.md): what both parsers of it share, this
    module's (annotations for stubs) and _schema's (types the `corvid` command encodes), which
    say what a type() is."""

    # Deeper nesting is refused with a SchemaError, not a RecursionError: a schema may come
    # from a server (reflection), and C++ types nest nowhere near this deep.
    MAX_NESTING = 64

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.depth = 0

    def type(self) -> T:
        """One type, nested or not: one() of the parser, within MAX_NESTING levels."""
        if self.depth >= self.MAX_NESTING:
            raise self.fail(f"types nest more than {self.MAX_NESTING} deep")
        self.depth += 1
        try:
            return self.one()
        finally:
            self.depth -= 1

    def one(self) -> T:
        raise NotImplementedError

    def parse(self) -> T:
        t = self.type()
        if self.i != len(self.s):
            raise self.fail("unexpected text")
        return t

    def list_of(self, close: str, sep: str) -> list[T]:
        items: list[T] = []
        if self.eat(close):
            return items
        while True:
            items.append(self.type())
            if self.eat(close):
                return items
            self.expect(sep)

    def fail(self, why: str) -> SchemaError:
        shown = self.s if len(self.s) <= 80 else self.s[:77] + "..."
        return SchemaError(f"{why} at offset {self.i} of type {shown!r}")

    def eat(self, token: str) -> bool:
        if self.s.startswith(token, self.i):
            self.i += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.eat(token):
            raise self.fail(f"expected {token!r}")

    def name(self, stop: str) -> str:
        """A qualified name: up to a character of `stop`, where a ':' only stops it when it
        is not part of a '::'."""
        j = self.i
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == ":" and s.startswith("::", self.i):
                self.i += 2
                continue
            if c in stop:
                break
            self.i += 1
        if j == self.i:
            raise self.fail("expected a name")
        return self.s[j : self.i]


class _Parser(TypeScanner[str]):
    """Canonical type text -> a Python annotation (text), noting the enums it meets."""

    def __init__(self, text: str, enums: dict[str, str], bytes_type: str) -> None:
        super().__init__(text)
        self.enums = enums
        self.bytes_type = bytes_type

    def one(self) -> str:
        if self.eat("stream "):
            return f"corvid.Stream[{self.type()}]"
        if self.eat("struct "):
            return py_name(self.name(",|)}>]:;{"))
        if self.eat("frozen "):
            n = self.name("{")
            self.expect("{")
            self.list_of("}", ",")
            return py_name(n)
        if self.eat("enum "):
            n = self.name(":")
            self.expect(":")
            under = self.type()
            self.enums[n] = under
            return py_name(n)
        if self.eat("bytes"):
            return self.bytes_type
        if self.eat("void"):
            return "None"
        for k in sorted(_SCALARS, key=len, reverse=True):
            if self.eat(k):
                return _SCALARS[k]
        if self.eat("?"):
            return f"Optional[{self.type()}]"
        if self.eat("["):
            elem = self.type()
            if self.eat(";"):
                n = self.name("]")
                self.expect("]")
                return f"Annotated[list[{elem}], corvid.Fixed({int(n)})]"
            self.expect("]")
            return f"list[{elem}]"
        if self.eat("{"):
            k = self.type()
            if self.eat(":"):
                v = self.type()
                self.expect("}")
                return f"dict[{k}, {v}]"
            self.expect("}")
            return f"set[{k}]"
        if self.eat("<"):
            alts = self.list_of(">", "|")
            return "Union[" + ", ".join(alts) + "]"
        if self.eat("("):
            elems = self.list_of(")", ",")
            if not elems:
                return "corvid.Monostate"
            return "tuple[" + ", ".join(elems) + "]"
        raise self.fail("unknown type")


def generate(schema: Any, source: str = "schema.json", bytes_type: str = "str") -> str:
    if not isinstance(schema, dict) or schema.get("corvid_schema") != 1:
        raise SchemaError('not a corvid schema (no "corvid_schema": 1)')
    enums: dict[str, str] = {}

    def ann(t: Any) -> str:
        if not isinstance(t, str):
            raise SchemaError(f"a type is not a string: {t!r}")
        return _Parser(t, enums, bytes_type).parse()

    struct_lines: list[str] = []
    for st in schema.get("structs", []):
        name, layout, fields = st["name"], st["layout"], st["fields"]
        frozen = layout == "frozen"
        if layout not in ("frozen", "evolvable"):
            raise SchemaError(f"struct {name}: unknown layout {layout!r}")
        struct_lines += [
            "",
            "",
            f"@corvid.struct(name={name!r}{', frozen=True' if frozen else ''})",
            "@dataclasses.dataclass",
            f"class {py_name(name)}:",
        ]
        if not fields:
            struct_lines.append("    pass")
        for i, f in enumerate(fields):
            struct_lines.append(f"    f{i}: {ann(f)}")

    fn_lines: list[str] = []
    for fn in schema.get("functions", []):
        name, params, result = fn["name"], fn["params"], fn["result"]
        canonical = "(" + ",".join(params) + ")->" + result
        stated = int(fn["signature"], 16)
        if fingerprint(canonical) != stated:
            raise SchemaError(
                f"function {name}: the schema's fingerprint {fn['signature']} is not that of "
                f"{canonical} ({fingerprint(canonical):#06x})"
            )
        args = ", ".join(f"p{i}: {ann(p)}" for i, p in enumerate(params))
        fn_lines += [
            "",
            "",
            f"@corvid.remote(name={name!r})  # signature {fn['signature']}",
            f"def {py_name(name)}({args}) -> {ann(result)}: ...",
        ]

    enum_lines: list[str] = []
    for name, under in sorted(enums.items()):
        enum_lines += [
            "",
            "",
            f"@corvid.enum_type(name={name!r}, underlying={under})",
            f"class {py_name(name)}(enum.IntEnum):",
            "    pass  # enumerators are not in the schema: values decode as ints",
        ]

    head = [
        f'"""Generated by corvid-stubgen from {source}. Do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "import dataclasses",
        "import enum",
        "from typing import Annotated, Optional, Union",
        "",
        "import corvid",
        "",
        "__all__ = ["
        + ", ".join(
            repr(py_name(n))
            for n in [*sorted(enums), *(s["name"] for s in schema.get("structs", []))]
            + [f["name"] for f in schema.get("functions", [])]
        )
        + "]",
        "_ = (Annotated, Optional, Union)  # not every schema uses all of them",
    ]
    return "\n".join(head + enum_lines + struct_lines + fn_lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="corvid-stubgen", description="typed declarations from describe_schema JSON"
    )
    ap.add_argument("schema", help="the schema file (describe_schema output), or - for stdin")
    ap.add_argument(
        "--bytes-as",
        choices=("str", "bytes"),
        default="str",
        help="Python type for the canonical 'bytes' (std::string, byte vectors)",
    )
    a = ap.parse_args(argv)
    try:
        text = sys.stdin.read() if a.schema == "-" else open(a.schema, encoding="utf-8").read()
        out = generate(read_json(text), a.schema, a.bytes_as)
    except (OSError, ValueError, KeyError, SchemaError) as e:
        print(f"corvid-stubgen: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
